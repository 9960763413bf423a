package replicas

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

const secret = "0123456789abcdef-test"

// echo answers a hop request with a JSON-RPC result naming the principal
// the hop authenticated and the body it passed on.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	res, _ := json.Marshal(map[string]string{"principal": tenant.From(r.Context()), "body": string(b)})
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":` + string(res) + `}`))
})

// TestHopRoundTrip: a forwarded call reaches the owner with the caller's
// principal and its params, and the owner's result comes back as is.
func TestHopRoundTrip(t *testing.T) {
	owner := New(Options{Self: sessionreg.Replica{ID: "b"}, Secret: secret, Lease: time.Second})
	srv := httptest.NewServer(owner.Handler(echo, 1<<20))
	defer srv.Close()
	from := New(Options{Self: sessionreg.Replica{ID: "a"}, Secret: secret, Lease: time.Second})
	raw, err := from.Forward(context.Background(), sessionreg.Replica{ID: "b", Addr: srv.URL}, "alice", json.RawMessage(`{"name":"run_code"}`))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"principal": "alice",
		"body": `{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"name":"run_code"}}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestHopRefusesUnauthenticated: without the shared secret, with a
// tampered body or principal, or with a stale timestamp, the hop answers
// 403 and the owner's handler never runs.
func TestHopRefusesUnauthenticated(t *testing.T) {
	ran := false
	owner := New(Options{Self: sessionreg.Replica{ID: "b"}, Secret: secret, Lease: time.Second})
	srv := httptest.NewServer(owner.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }), 1<<20))
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`
	now := strconv.FormatInt(time.Now().Unix(), 10)
	old := strconv.FormatInt(time.Now().Add(-2*MaxSkew).Unix(), 10)
	tests := []struct {
		name           string
		ts, principal  string
		sig, sentBody  string
		method         string
		wantStatusCode int
	}{
		{"no signature", now, "alice", "", body, "POST", 403},
		{"wrong secret", now, "alice", sign("another-secret-0000", now, "alice", []byte(body)), body, "POST", 403},
		{"principal changed", now, "bob", sign(secret, now, "alice", []byte(body)), body, "POST", 403},
		{"body changed", now, "alice", sign(secret, now, "alice", []byte(body)), body + " ", "POST", 403},
		{"stale", old, "alice", sign(secret, old, "alice", []byte(body)), body, "POST", 403},
		{"GET", now, "alice", sign(secret, now, "alice", nil), "", "GET", 405},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+HopPath, strings.NewReader(tc.sentBody))
			req.Header.Set(hdrTime, tc.ts)
			req.Header.Set(hdrPrincipal, tc.principal)
			req.Header.Set(hdrSignature, tc.sig)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatusCode || ran {
				t.Errorf("status %d (handler ran: %v), want %d", resp.StatusCode, ran, tc.wantStatusCode)
			}
		})
	}
	noSecret := New(Options{Self: sessionreg.Replica{ID: "c"}, Lease: time.Second})
	if err := noSecret.verify(now, "alice", sign("", now, "alice", []byte(body)), []byte(body)); err == nil {
		t.Error("a replica without a secret accepted a hop request")
	}
}

// TestLifecycle: routing by owner, a lost owner, a drained replica, and a
// dead one found by the sweep within the lease.
func TestLifecycle(t *testing.T) {
	reg := &sessionreg.Memory{}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := New(Options{Self: sessionreg.Replica{ID: "a", Addr: "http://a"}, Registry: reg, Secret: secret, Lease: 9 * time.Second, Now: clock})
	b := New(Options{Self: sessionreg.Replica{ID: "b", Addr: "http://b"}, Registry: reg, Secret: secret, Lease: 9 * time.Second, Now: clock})
	ctx := context.Background()
	for _, s := range []*Set{a, b} {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.Claim(ctx, "alice", "sess_1", sessionreg.Label{}))
	must(b.Claim(ctx, "alice", "sess_2", sessionreg.Label{}))
	if err := b.Claim(ctx, "alice", "sess_1", sessionreg.Label{}); !errors.Is(err, sessionreg.ErrClaimed) {
		t.Errorf("b claimed a's session: %v", err)
	}
	must(b.Claim(ctx, "bob", "sess_1", sessionreg.Label{})) // another principal's id is another key
	route := func(s *Set, p, id string) string {
		o, remote, err := s.Route(ctx, p, id)
		switch {
		case err != nil:
			return err.Error()
		case remote:
			return "forward to " + o.ID
		}
		return "here"
	}
	steps := []struct{ name, got, want string }{
		{"own session", route(a, "alice", "sess_1"), "here"},
		{"b's session from a", route(a, "alice", "sess_2"), "forward to b"},
		{"unknown", route(a, "alice", "nope"), "here"},
		{"bob's sess_1 from a", route(a, "bob", "sess_1"), "forward to b"},
	}
	b.Stop() // drained
	steps = append(steps, struct{ name, got, want string }{"after b drained", route(a, "alice", "sess_2"),
		"session lost (replica b stopped at 2026-03-01T12:00:00Z)"})
	must(b.Start(ctx)) // b is back as a new life; c dies without draining
	c := New(Options{Self: sessionreg.Replica{ID: "c", Addr: "http://c"}, Registry: reg, Secret: secret, Lease: 9 * time.Second, Now: clock})
	must(c.Start(ctx))
	must(c.Claim(ctx, "alice", "sess_3", sessionreg.Label{}))
	now = now.Add(6 * time.Second)
	a.beat(ctx)
	steps = append(steps, struct{ name, got, want string }{"c within its lease", strconv.Itoa(a.Sweep(ctx)), "0"})
	now = now.Add(6 * time.Second) // 12 s after c's heartbeat, 6 s after a's
	steps = append(steps, struct{ name, got, want string }{"c's own sweep spares itself", strconv.Itoa(c.Sweep(ctx)), "1"},
		struct{ name, got, want string }{"c still holds its session", route(c, "alice", "sess_3"), "here"},
		struct{ name, got, want string }{"sweep finds c (b was swept by c)", strconv.Itoa(a.Sweep(ctx)), "1"},
		struct{ name, got, want string }{"c's session lost", route(a, "alice", "sess_3"), "session lost (replica c stopped at 2026-03-01T12:00:12Z)"})
	for _, st := range steps {
		if st.got != st.want {
			t.Errorf("%s: %q, want %q", st.name, st.got, st.want)
		}
	}
}
