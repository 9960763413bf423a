package httpserve

import (
	"net/http"
	"net/http/httptest"
	"testing"
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
