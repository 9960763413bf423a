package httpserve

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Routes served; the metrics route label is one of these or "other".
const (
	routeMCP     = "/mcp"
	routeHealth  = "/healthz"
	routeReady   = "/readyz"
	routeMetrics = "/metrics"
	routePRM     = "/.well-known/oauth-protected-resource"
	// routeFiles serves transfer URLs: /files/<token>, the token never
	// logged (it is the URL's only credential besides the bearer token).
	routeFiles = "/files/"
	// routeConsole is the web console's prefix.
	routeConsole = "/console"
)

// newHandler assembles the routes behind the access log.
func newHandler(o Options) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(routeMCP, guard(o, authenticate(o, o.MCP)))
	if o.Files != nil {
		mux.Handle(routeFiles, guard(o, authenticate(o, o.Files)))
	}
	if o.Console != nil {
		mux.Handle(routeConsole+"/", guard(o, o.Console))
		mux.Handle(routeConsole, guard(o, o.Console))
	}
	mux.HandleFunc("GET "+routeHealth, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET "+routeReady, readyHandler(o.Ready))
	mux.Handle("GET "+routeMetrics, o.Metrics.Handler())
	for path, h := range o.Routes {
		mux.Handle(path, h)
	}
	if len(o.AuthServers) > 0 {
		prm := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource: o.Resource, AuthorizationServers: o.AuthServers, ScopesSupported: o.Scopes,
			BearerMethodsSupported: []string{"header"}, ResourceName: "codexec",
		})
		mux.Handle(routePRM, prm)
		if p := resourcePath(o.Resource); p != "" {
			mux.Handle(routePRM+p, prm) // RFC 9728 §3.1: path-suffixed form
		}
	}
	return accessLog(o, mux)
}

func readyHandler(ready func(context.Context) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ready != nil {
			if err := ready(r.Context()); err != nil {
				http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = w.Write([]byte("ready\n"))
	}
}

// guard refuses requests whose Host is not allowed or whose Origin is
// foreign (DNS rebinding, cross-site browser requests). The SDK handler adds
// its own check that loopback-bound requests name a loopback Host.
func guard(o Options, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(o.AllowedHosts) > 0 && !slices.Contains(o.AllowedHosts, r.Host) {
			http.Error(w, "Forbidden: Host "+r.Host+" not allowed", http.StatusForbidden)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(origin, r.Host, o.AllowedOrigins) {
			http.Error(w, "Forbidden: Origin "+origin+" not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed accepts listed origins and the server's own origin (same
// host:port as the request's Host, which the Host checks vouch for).
func originAllowed(origin, host string, allowed []string) bool {
	if slices.Contains(allowed, origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

// authenticate puts the go-sdk bearer middleware in front of next when a
// verifier is configured, and records the principal for the access log.
func authenticate(o Options, next http.Handler) http.Handler {
	if o.Verifier == nil {
		return next
	}
	opts := &auth.RequireBearerTokenOptions{Scopes: o.Scopes, AllowMissingExpiration: true, ClockSkew: 30 * time.Second}
	if len(o.AuthServers) > 0 {
		opts.ResourceMetadataURL = metadataURL(o.Resource)
	}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			infoOf(r).principal = ti.UserID
		}
		next.ServeHTTP(w, r)
	})
	protected := auth.RequireBearerToken(o.Verifier, opts)(inner)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			o.Metrics.AuthFailure("missing")
		}
		protected.ServeHTTP(w, r)
	})
}

// metadataURL is where RFC 9728 puts the metadata of resource: the
// well-known prefix inserted before the resource's path.
func metadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return resource
	}
	return u.Scheme + "://" + u.Host + routePRM + resourcePath(resource)
}

func resourcePath(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	return strings.TrimRight(u.Path, "/")
}

// reqInfo is what inner handlers tell the access log.
type reqInfo struct{ principal string }

type infoKey struct{}

func infoOf(r *http.Request) *reqInfo {
	if i, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
		return i
	}
	return &reqInfo{}
}

// accessLog logs one line per finished request and feeds the metrics. A
// 401 without a challenge (token-file mode, no metadata document) gets a
// plain Bearer challenge, as RFC 6750 requires.
func accessLog(o Options, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &reqInfo{}
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		d := time.Since(start)
		o.Metrics.HTTPRequest(route(r.URL.Path), r.Method, rec.status, d)
		session := r.Header.Get("Mcp-Session-Id")
		if session == "" {
			session = rec.Header().Get("Mcp-Session-Id") // assigned by initialize
		}
		level := slog.LevelInfo
		if rec.status >= 500 {
			level = slog.LevelWarn
		}
		slog.Log(r.Context(), level, "http", "method", r.Method, "path", logPath(r.URL.Path), "status", rec.status,
			"bytes", rec.bytes, "ms", d.Milliseconds(), "remote", r.RemoteAddr, "principal", info.principal,
			"session", session)
	})
}

// logPath is path as the access log shows it: a transfer URL's token cut
// to its first 4 characters, enough to follow one request and useless to
// replay.
func logPath(path string) string {
	if tok, ok := strings.CutPrefix(path, routeFiles); ok && len(tok) > 4 {
		return routeFiles + tok[:4] + "…"
	}
	return path
}

func route(path string) string {
	switch path {
	case routeMCP, routeHealth, routeReady, routeMetrics:
		return path
	}
	if strings.HasPrefix(path, routeFiles) {
		return routeFiles
	}
	if strings.HasPrefix(path, routePRM) {
		return routePRM
	}
	if path == routeConsole || strings.HasPrefix(path, routeConsole+"/") {
		return routeConsole
	}
	return "other"
}

// recorder captures status and size. Unwrap lets http.ResponseController
// reach the real writer's Flush, which SSE needs.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
		if code == http.StatusUnauthorized && r.Header().Get("WWW-Authenticate") == "" {
			r.Header().Set("WWW-Authenticate", `Bearer realm="codexec"`)
		}
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush is implemented directly too, for code that type-asserts.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
