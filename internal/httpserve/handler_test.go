package httpserve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/codexec/codexec/internal/metrics"
)

func TestHelpers(t *testing.T) {
	cases := []struct{ got, want string }{
		{metadataURL("https://codexec.example.com/mcp"), "https://codexec.example.com/.well-known/oauth-protected-resource/mcp"},
		{metadataURL("http://127.0.0.1:8080/mcp/"), "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"},
		{listenAddr(":8080"), "127.0.0.1:8080"},
		{listenAddr("0.0.0.0:8080"), "0.0.0.0:8080"},
		{route("/.well-known/oauth-protected-resource/mcp"), routePRM},
		{route("/etc/passwd"), "other"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	origins := []struct {
		origin, host string
		ok           bool
	}{
		{"http://127.0.0.1:8080", "127.0.0.1:8080", true},
		{"https://app.example", "127.0.0.1:8080", true}, // listed
		{"http://evil.example", "127.0.0.1:8080", false},
		{"null", "127.0.0.1:8080", false},
	}
	for _, o := range origins {
		if got := originAllowed(o.origin, o.host, []string{"https://app.example"}); got != o.ok {
			t.Errorf("originAllowed(%q, %q) = %v", o.origin, o.host, got)
		}
	}
}

func TestGuardHosts(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})
	h := guard(Options{AllowedHosts: []string{"codexec.example.com"}}, ok)
	for host, want := range map[string]int{"codexec.example.com": 200, "evil.example": 403} {
		req := httptest.NewRequest("POST", "/mcp", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
	}
}

// TestLogPathHidesTokens: the access log shows a transfer URL's token cut
// to 4 characters, and its metrics route is "/files/".
func TestLogPathHidesTokens(t *testing.T) {
	for _, c := range []struct{ path, log, route string }{
		{"/files/abcdefghijklmnop", "/files/abcd…", "/files/"},
		{"/files/ab", "/files/ab", "/files/"},
		{"/mcp", "/mcp", "/mcp"},
	} {
		if got := logPath(c.path); got != c.log {
			t.Errorf("logPath(%q) = %q, want %q", c.path, got, c.log)
		}
		if got := route(c.path); got != c.route {
			t.Errorf("route(%q) = %q, want %q", c.path, got, c.route)
		}
	}
}

// TestConsoleRoute: the console is served under /console without the
// bearer token /mcp needs (it logs browsers in itself), behind the same
// Host and Origin checks.
func TestConsoleRoute(t *testing.T) {
	console := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("console")) })
	deny := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		return nil, auth.ErrInvalidToken
	}
	h := newHandler(Options{Console: console, Verifier: deny, AllowedHosts: []string{"codexec.example.com"}, Metrics: metrics.New()})
	for _, c := range []struct {
		path, host, origin string
		want               int
	}{
		{"/console/", "codexec.example.com", "", 200},
		{"/console/history", "codexec.example.com", "https://codexec.example.com", 200},
		{"/console", "codexec.example.com", "", 200},
		{"/console/", "evil.example", "", 403},
		{"/console/sessions/x/close", "codexec.example.com", "http://evil.example", 403},
		{"/mcp", "codexec.example.com", "", 401},
	} {
		req := httptest.NewRequest("POST", c.path, nil)
		req.Host = c.host
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s Host %s Origin %q: %d, want %d", c.path, c.host, c.origin, rec.Code, c.want)
		}
	}
	if got := route("/console/executions/x"); got != routeConsole {
		t.Errorf("route = %q, want %q", got, routeConsole)
	}
}
