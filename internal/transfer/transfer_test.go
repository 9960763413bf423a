package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/tenant"
)

// fixed serves the same bytes to every download.
func fixed(b []byte) Download {
	return func(context.Context) (*Content, error) {
		return &Content{ReaderAt: bytes.NewReader(b), Size: int64(len(b)), Name: "d/f.txt", MIMEType: "text/plain"}, nil
	}
}

func TestIssueNeedsBase(t *testing.T) {
	tk := New(time.Minute)
	if _, _, err := tk.IssueDownload("alice", fixed(nil)); err != ErrNoBase {
		t.Fatalf("before SetBase: %v, want ErrNoBase", err)
	}
	tk.SetBase("http://h:1/")
	u, exp, err := tk.IssueDownload("alice", fixed(nil))
	tok, ok := strings.CutPrefix(u, "http://h:1/files/")
	if err != nil || !ok || len(tok) != 43 || time.Until(exp) > time.Minute {
		t.Fatalf("IssueDownload = %q, %v, %v", u, exp, err)
	}
}

// TestHandler: a URL serves its principal once; another principal, a
// method that does not fit, a HEAD and an unknown token leave it usable or
// are refused; an expired one is gone.
func TestHandler(t *testing.T) {
	tk := New(time.Minute)
	now := time.Now()
	tk.now = func() time.Time { return now }
	tk.SetBase("http://h")
	var gotPrincipal string
	up := func(ctx context.Context, body io.Reader, size int64) (any, error) {
		gotPrincipal = tenant.From(ctx)
		b, _ := io.ReadAll(body)
		return map[string]any{"n": len(b), "size": size}, nil
	}
	h := tk.Handler(func(r *http.Request) string { return r.Header.Get("X-P") }, nil)
	do := func(method, u, p string, body string) (int, string) {
		req := httptest.NewRequest(method, strings.TrimPrefix(u, "http://h"), strings.NewReader(body))
		req.Header.Set("X-P", p)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	codeOf := func(body string) string {
		var e struct{ Code string }
		_ = json.Unmarshal([]byte(body), &e)
		return e.Code
	}
	uu, _, _ := tk.IssueUpload("alice", up)
	du, _, _ := tk.IssueDownload("alice", fixed([]byte("hello")))
	type step struct {
		method, url, principal, body string
		status                       int
		code, contains               string
	}
	for i, s := range []step{
		{"PUT", uu, "bob", "x", 403, "NOT_ALLOWED", ""},
		{"GET", uu, "alice", "", 405, "INVALID_PARAMS", ""},
		{"PUT", uu, "alice", "abc", 200, "", `"n":3`},
		{"PUT", uu, "alice", "abc", 404, "FILE_NOT_FOUND", ""},
		{"HEAD", du, "alice", "", 200, "", ""},
		{"GET", du, "bob", "", 403, "NOT_ALLOWED", ""},
		{"GET", du, "alice", "", 200, "", "hello"},
		{"GET", du, "alice", "", 404, "FILE_NOT_FOUND", ""},
		{"GET", "http://h/files/nope", "alice", "", 404, "FILE_NOT_FOUND", ""},
		{"DELETE", "http://h/files/nope", "alice", "", 405, "INVALID_PARAMS", ""},
	} {
		st, body := do(s.method, s.url, s.principal, s.body)
		if st != s.status || (s.code != "" && codeOf(body) != s.code) || !strings.Contains(body, s.contains) {
			t.Errorf("step %d %s as %s: %d %s, want %d %s", i, s.method, s.principal, st, body, s.status, s.code)
		}
	}
	if gotPrincipal != "alice" {
		t.Errorf("upload ran as %q", gotPrincipal)
	}
	du, _, _ = tk.IssueDownload("alice", fixed([]byte("x")))
	now = now.Add(time.Minute)
	if st, body := do("GET", du, "alice", ""); st != 404 || codeOf(body) != "FILE_NOT_FOUND" {
		t.Errorf("expired: %d %s", st, body)
	}
	if diff := cmp.Diff(0, len(tk.live)); diff != "" {
		t.Errorf("live tickets after expiry (-want +got):\n%s", diff)
	}
}

func TestRange(t *testing.T) {
	tk := New(time.Minute)
	tk.SetBase("http://h")
	du, _, _ := tk.IssueDownload("p", fixed([]byte("0123456789")))
	req := httptest.NewRequest("GET", strings.TrimPrefix(du, "http://h"), nil)
	req.Header.Set("Range", "bytes=2-4")
	w := httptest.NewRecorder()
	tk.Handler(func(*http.Request) string { return "p" }, nil).ServeHTTP(w, req)
	if w.Code != http.StatusPartialContent || w.Body.String() != "234" || w.Header().Get("Content-Type") != "text/plain" {
		t.Errorf("Range: %d %q %v", w.Code, w.Body.String(), w.Header())
	}
}

// TestOpener: with no base, the first issue opens the listener, a failed
// open is reported and retried, and a later issue does not open again.
func TestOpener(t *testing.T) {
	tk := New(time.Minute)
	calls, fail := 0, true
	tk.SetOpener(func() (string, error) {
		calls++
		if fail {
			return "", io.ErrUnexpectedEOF
		}
		return "http://127.0.0.1:5/", nil
	})
	if _, _, err := tk.IssueUpload("alice", nil); err == nil || !strings.Contains(err.Error(), "transfer listener") {
		t.Fatalf("failed open: %v", err)
	}
	fail = false
	for range 2 {
		if u, _, err := tk.IssueUpload("alice", nil); err != nil || !strings.HasPrefix(u, "http://127.0.0.1:5/files/") {
			t.Fatalf("IssueUpload = %q, %v", u, err)
		}
	}
	if calls != 2 {
		t.Fatalf("opener called %d times, want 2 (one failure, one success)", calls)
	}
}

// TestLocalOnly: requests with an Origin header or a Host that is not a
// loopback address are refused; local clients' requests pass.
func TestLocalOnly(t *testing.T) {
	h := LocalOnly(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for _, c := range []struct {
		host, origin string
		want         int
	}{
		{"127.0.0.1:4000", "", http.StatusNoContent},
		{"[::1]:4000", "", http.StatusNoContent},
		{"localhost:4000", "", http.StatusNoContent},
		{"127.0.0.1:4000", "http://evil.example", http.StatusForbidden},
		{"127.0.0.1:4000", "null", http.StatusForbidden},
		{"evil.example:4000", "", http.StatusForbidden},
		{"10.0.0.1:4000", "", http.StatusForbidden},
	} {
		req := httptest.NewRequest(http.MethodGet, "/files/x", nil)
		req.Host = c.host
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("Host %s Origin %q: %d, want %d", c.host, c.origin, rec.Code, c.want)
		}
	}
}
