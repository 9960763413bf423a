// Package httpserve runs codexec's HTTP front: the MCP Streamable HTTP
// endpoint (/mcp, handler supplied by mcpserver) behind bearer-token auth and
// DNS-rebinding checks, liveness and readiness probes (/healthz, /readyz),
// Prometheus metrics (/metrics), the OAuth Protected Resource Metadata
// document, the web console (/console, handler supplied by package
// console), a structured access log, and a graceful shutdown that lets
// running tool calls finish within a grace period.
//
// It knows nothing of MCP itself: the MCP handler, the token verifier, the
// readiness check and the drain step are passed in as plain values.
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/codexec/codexec/internal/metrics"
)

// Options describe one HTTP server. MCP is required.
type Options struct {
	// Addr is host:port; an empty host means loopback (127.0.0.1), so
	// ":8080" never exposes the server by accident.
	Addr string
	// TLSCert and TLSKey, when set, serve HTTPS.
	TLSCert, TLSKey string
	// MCP serves /mcp.
	MCP http.Handler
	// Verifier authenticates /mcp; nil disables auth (loopback use).
	Verifier auth.TokenVerifier
	// Resource is the public URL of /mcp (the token audience).
	Resource string
	// AuthServers, when non-empty, are OAuth issuers published in the
	// Protected Resource Metadata document; 401s then point at it.
	AuthServers []string
	// Scopes are required of every token (and advertised).
	Scopes []string
	// AllowedOrigins may call /mcp from a browser on another origin;
	// AllowedHosts, when set, are the only Host values /mcp accepts.
	AllowedOrigins, AllowedHosts []string
	// Ready reports whether the sandbox can run code (/readyz).
	Ready func(context.Context) error
	// Metrics receives request and auth-failure counts and serves /metrics.
	Metrics *metrics.Metrics
	// Drain stops new tool calls, waits for running ones until ctx ends,
	// cancels the rest and returns how many it cancelled.
	Drain func(ctx context.Context) int
	// Grace bounds the wait for running calls at shutdown.
	Grace time.Duration
	// Files, when set, serves the transfer URLs (transfer.PathPrefix)
	// behind the same Host, Origin and bearer checks as /mcp.
	Files http.Handler
	// Console, when set, serves the web console under /console behind
	// the same Host and Origin checks as /mcp but not its bearer auth: the
	// console logs browsers in with a cookie of its own.
	Console http.Handler
	// Routes are more handlers by path (the internal hop between
	// replicas), served outside /mcp's bearer auth and Host checks: each
	// authenticates its requests itself.
	Routes map[string]http.Handler
	// Listening, if set, is called with the bound address (tests, logs).
	Listening func(net.Addr)
}

// Serve listens and serves until ctx ends, then shuts down gracefully: the
// listener stays open while running tool calls get Grace to finish (Ready
// should then report draining), the rest are cancelled, and then the
// listener and remaining connections (idle SSE streams) are closed.
func Serve(ctx context.Context, o Options) error {
	ln, err := net.Listen("tcp", listenAddr(o.Addr))
	if err != nil {
		return fmt.Errorf("http listen: %w", err)
	}
	srv := &http.Server{Handler: newHandler(o), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn)}
	announce(ln.Addr(), o)
	if o.Listening != nil {
		o.Listening(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() {
		if o.TLSCert != "" {
			errc <- srv.ServeTLS(ln, o.TLSCert, o.TLSKey)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("http serve: %w", err)
	case <-ctx.Done():
	}
	shutdown(srv, o)
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// shutdown runs the graceful stop sequence and logs what it had to kill.
//
// The listener stays open while the drain runs: /readyz answers 503 (the
// caller's Ready reports draining), so a proxy or Kubernetes stops sending
// new work and probes see why, while the running calls finish and new tool
// calls are refused in the tool's own error shape. Only then does the
// server close, letting the last responses flush.
func shutdown(srv *http.Server, o Options) {
	start := time.Now()
	slog.Info("shutting down: /readyz reports draining, waiting for running calls", "grace", o.Grace)
	graceCtx, cancel := context.WithTimeout(context.Background(), o.Grace)
	defer cancel()
	cancelled := 0
	if o.Drain != nil {
		cancelled = o.Drain(graceCtx)
	}
	stopped := make(chan error, 1)
	go func() {
		// Shutdown waits for handlers still writing; a second is enough
		// for the last responses, and idle SSE streams would keep it
		// waiting for ever, so they are cut then.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		stopped <- srv.Shutdown(ctx)
	}()
	if err := <-stopped; err != nil {
		_ = srv.Close()
	}
	if cancelled > 0 {
		slog.Warn("shutdown grace expired: running calls were killed", "killed", cancelled, "grace", o.Grace)
	}
	slog.Info("http server stopped", "ms", time.Since(start).Milliseconds())
}

// listenAddr binds an empty host to loopback.
func listenAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// announce logs where the server listens, loudly when it is reachable from
// other machines without any authentication.
func announce(addr net.Addr, o Options) {
	scheme := "http"
	if o.TLSCert != "" {
		scheme = "https"
	}
	slog.Info("codexec serving MCP over HTTP", "url", scheme+"://"+addr.String()+"/mcp", "auth", o.Verifier != nil)
	if tcp, ok := addr.(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && o.Verifier == nil {
		slog.Warn("!!! codexec is listening on a NON-LOOPBACK address WITHOUT AUTHENTICATION: anyone who can reach " +
			addr.String() + " can run code on this machine. Set CODEXEC_AUTH_TOKENS or CODEXEC_OAUTH_ISSUER, or bind 127.0.0.1 !!!")
	}
}
