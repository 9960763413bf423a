package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestBrowserHarnessSeesViolations: the browser harness reports a
// Content-Security-Policy violation and an uncaught exception, so a
// console test that finds none has looked.
func TestBrowserHarnessSeesViolations(t *testing.T) {
	sameInEveryMode(t, "no sandbox involved")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/csp":
			w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'")
			fmt.Fprint(w, `<!doctype html><title>csp</title><script>window.ran=1</script>`)
		case "/throw.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `throw new Error("harness-probe")`)
		case "/throw":
			fmt.Fprint(w, `<!doctype html><title>throw</title><script src="/throw.js"></script>`)
		default:
			fmt.Fprint(w, `<!doctype html><title>ok</title><p>ok</p>`)
		}
	}))
	defer srv.Close()
	b := newBrowser(t, 30*time.Second)
	for _, c := range []struct{ path, want string }{
		{"/ok", ""},
		{"/csp", "Content Security Policy"},
		{"/throw", "harness-probe"},
	} {
		b.open(srv.URL + c.path)
		time.Sleep(200 * time.Millisecond) // console events arrive after the load
		got := strings.Join(b.takeProblems(), "\n")
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: browser reported %q, want %q", c.path, got, c.want)
		}
	}
	if ran := evalAs[string](b, "typeof window.ran"); ran != "undefined" {
		t.Errorf("the inline script ran despite the policy: window.ran=%v", ran)
	}
}
