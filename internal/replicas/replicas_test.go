package replicas

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
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
// the hop authenticated, whether it marked the request forwarded, and the
// body it passed on.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	res, _ := json.Marshal(map[string]any{"principal": tenant.From(r.Context()), "forwarded": Forwarded(r.Context()), "body": string(b)})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":` + string(res) + `}`))
})

// hopPair is an owner replica "b" serving h behind its hop handler, and a
// replica "a" forwarding to it.
func hopPair(t *testing.T, h http.Handler) (from *Set, owner *Set, to sessionreg.Replica) {
	t.Helper()
	owner = New(Options{Self: sessionreg.Replica{ID: "b"}, Secret: secret, Lease: time.Second})
	srv := httptest.NewServer(owner.Handler(h, 1<<20))
	t.Cleanup(srv.Close)
	from = New(Options{Self: sessionreg.Replica{ID: "a"}, Secret: secret, Lease: time.Second})
	return from, owner, sessionreg.Replica{ID: "b", Addr: srv.URL}
}

// TestHopRoundTrip: a forwarded request reaches the owner with the caller's
// principal, marked forwarded, with its method and params, and the owner's
// result comes back as is.
func TestHopRoundTrip(t *testing.T) {
	from, _, to := hopPair(t, echo)
	raw, err := from.Forward(context.Background(), to, "alice", "resources/read", json.RawMessage(`{"uri":"codexec://sessions/s/files/a"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"principal": "alice", "forwarded": true,
		"body": `{"id":1,"jsonrpc":"2.0","method":"resources/read","params":{"uri":"codexec://sessions/s/files/a"}}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestHopStream: the owner's SSE answer passes its notifications to
// notify, in order, before the result; a JSON-RPC error answer is a
// *RemoteError with the owner's code and message.
func TestHopStream(t *testing.T) {
	from, _, to := hopPair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 2 {
			fmt.Fprintf(w, "event: message\nid: s_%d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":%d}}\n\n", i, i+1)
			w.(http.Flusher).Flush()
		}
		if strings.Contains(r.Header.Get(hdrPrincipal), "err") {
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32002,\"message\":\"Resource not found\",\"data\":{\"uri\":\"x\"}}}\n\n")
			return
		}
		fmt.Fprint(w, ": a comment\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\n")
		fmt.Fprint(w, "data: \"result\":{\"ok\":true}}\n\n")
	}))
	var got []string
	notify := func(method string, params json.RawMessage) { got = append(got, method+" "+string(params)) }
	raw, err := from.Forward(context.Background(), to, "alice", "tools/call", json.RawMessage(`{}`), notify)
	if err != nil || string(raw) != `{"ok":true}` {
		t.Fatalf("result %s %v", raw, err)
	}
	want := []string{`notifications/progress {"progressToken":"t","progress":1}`, `notifications/progress {"progressToken":"t","progress":2}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notifications (-want +got)\n%s", diff)
	}
	_, err = from.Forward(context.Background(), to, "err", "resources/read", json.RawMessage(`{}`), nil)
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != -32002 || re.Message != "Resource not found" || string(re.Data) != `{"uri":"x"}` {
		t.Errorf("error answer: %#v", err)
	}
}

// TestFollowHop: the served request's context ends when the forwarding
// replica gives up the hop request (its caller cancelled or went away).
func TestFollowHop(t *testing.T) {
	stopped := make(chan error, 1)
	from, _, to := hopPair(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, release := FollowHop(context.WithoutCancel(r.Context())) // as the SDK serves it
		defer release()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"method\":\"notifications/progress\",\"params\":{}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-ctx.Done():
			stopped <- context.Cause(ctx)
		case <-time.After(10 * time.Second):
			stopped <- errors.New("still running 10 s after the caller gave up")
		}
	}))
	ctx, cancel := context.WithCancel(context.Background())
	notify := func(string, json.RawMessage) { cancel() } // the caller gives up once the run is under way
	if _, err := from.Forward(ctx, to, "alice", "tools/call", json.RawMessage(`{}`), notify); err == nil {
		t.Error("a cancelled forward returned no error")
	}
	if err := <-stopped; err == nil || !strings.Contains(err.Error(), "forwarding replica gave up") {
		t.Errorf("owner's request: %v", err)
	}
	if ctx, release := FollowHop(context.Background()); ctx != context.Background() {
		t.Error("FollowHop changed a context that did not come over the hop")
	} else {
		release()
	}
}

// signed is a hop request for target with fields f, signed with key.
func signed(t *testing.T, url, key string, f hopFields, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+HopPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(hdrTime, f.ts)
	req.Header.Set(hdrNonce, f.nonce)
	req.Header.Set(hdrTarget, f.target)
	req.Header.Set(hdrPrincipal, f.principal)
	if key != "" {
		req.Header.Set(hdrSignature, sign(key, f, []byte(body)))
	}
	return req
}

// TestHopRefusesUnauthenticated: without the shared secret, with a
// tampered body, principal, nonce or target, with a stale timestamp,
// addressed to another replica, or replayed, the hop answers 403 and the
// owner's handler never runs; a full nonce cache answers 503 rather than
// forget a nonce.
func TestHopRefusesUnauthenticated(t *testing.T) {
	ran := 0
	owner := New(Options{Self: sessionreg.Replica{ID: "b"}, Secret: secret, Lease: time.Second})
	srv := httptest.NewServer(owner.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran++ }), 1<<20))
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`
	now := strconv.FormatInt(time.Now().Unix(), 10)
	old := strconv.FormatInt(time.Now().Add(-2*MaxSkew).Unix(), 10)
	ok := func() hopFields { return hopFields{ts: now, nonce: rand.Text(), target: "b", principal: "alice"} }
	with := func(change func(*hopFields)) hopFields { f := ok(); change(&f); return f }
	do := func(req *http.Request) int {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	replayed := ok()
	if code := do(signed(t, srv.URL, secret, replayed, body)); code != http.StatusOK || ran != 1 {
		t.Fatalf("a valid request: HTTP %d, handler ran %d times", code, ran)
	}
	ran = 0
	tests := []struct {
		name string
		req  *http.Request
		want int
	}{
		{"no signature", signed(t, srv.URL, "", ok(), body), 403},
		{"wrong secret", signed(t, srv.URL, "another-secret-0000", ok(), body), 403},
		{"replayed", signed(t, srv.URL, secret, replayed, body), 403},
		{"for another replica", signed(t, srv.URL, secret, with(func(f *hopFields) { f.target = "c" }), body), 403},
		{"no nonce", signed(t, srv.URL, secret, with(func(f *hopFields) { f.nonce = "" }), body), 403},
		{"stale", signed(t, srv.URL, secret, with(func(f *hopFields) { f.ts = old }), body), 403},
		{"GET", func() *http.Request { r := signed(t, srv.URL, secret, ok(), ""); r.Method = http.MethodGet; return r }(), 405},
	}
	for _, tc := range []struct {
		name   string
		change func(r *http.Request)
	}{
		{"principal changed", func(r *http.Request) { r.Header.Set(hdrPrincipal, "bob") }},
		{"target changed", func(r *http.Request) { r.Header.Set(hdrTarget, "c") }},
		{"nonce changed", func(r *http.Request) { r.Header.Set(hdrNonce, rand.Text()) }},
		{"time changed", func(r *http.Request) { r.Header.Set(hdrTime, strconv.FormatInt(time.Now().Unix()+1, 10)) }},
		{"body changed", func(r *http.Request) {
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader(body+" ")), int64(len(body)+1)
		}},
	} {
		req := signed(t, srv.URL, secret, ok(), body)
		tc.change(req)
		tests = append(tests, struct {
			name string
			req  *http.Request
			want int
		}{tc.name, req, 403})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if code := do(tc.req); code != tc.want || ran != 0 {
				t.Errorf("HTTP %d (handler ran %d times), want %d", code, ran, tc.want)
			}
		})
	}
	t.Run("nonce cache full", func(t *testing.T) {
		owner.nonces.mu.Lock()
		owner.nonces.max = len(owner.nonces.until)
		owner.nonces.mu.Unlock()
		if code := do(signed(t, srv.URL, secret, ok(), body)); code != http.StatusServiceUnavailable || ran != 0 {
			t.Errorf("HTTP %d (handler ran %d times), want 503", code, ran)
		}
	})
	noSecret := New(Options{Self: sessionreg.Replica{ID: "c"}, Lease: time.Second})
	f := hopFields{ts: now, nonce: rand.Text(), target: "c", principal: "alice"}
	if _, err := noSecret.verify(f, sign("", f, []byte(body)), []byte(body)); err == nil {
		t.Error("a replica without a secret accepted a hop request")
	}
}

// TestNonceExpiry: a nonce is refused again within nonceTTL and forgotten
// after it, and the cache holds only unexpired nonces.
func TestNonceExpiry(t *testing.T) {
	c := nonceCache{max: 3}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		nonce string
		at    time.Duration
		want  int
	}{
		{"n1", 0, 0},
		{"n1", nonceTTL - time.Second, 403},
		{"n2", time.Second, 0},
		{"n3", 2 * time.Second, 0},
		{"n4", 3 * time.Second, 503}, // three unexpired: full
		{"n1", nonceTTL, 0},          // n1 expired: it and n4 fit again
		{"n4", nonceTTL, 503},        // n2, n3 and the new n1 are unexpired
		{"n4", nonceTTL + 2*time.Second, 0},
	}
	for i, st := range steps {
		if got, _ := c.add(st.nonce, t0.Add(st.at)); got != st.want {
			t.Errorf("step %d: %s at %v: %d, want %d", i, st.nonce, st.at, got, st.want)
		}
	}
	if len(c.until) > c.max || len(c.queue)-c.head != len(c.until) {
		t.Errorf("cache holds %d nonces, queue %d (max %d)", len(c.until), len(c.queue)-c.head, c.max)
	}
}

// twoReplicas are replicas a and b on reg with a 9 s lease and clock.
func twoReplicas(reg sessionreg.Registry, clock func() time.Time) (a, b *Set) {
	o := func(id string) Options {
		return Options{Self: sessionreg.Replica{ID: id, Addr: "http://" + id}, Registry: reg, Secret: secret, Lease: 9 * time.Second, Now: clock}
	}
	return New(o("a")), New(o("b"))
}

// TestLifecycle: routing by owner, a lost owner, a drained replica, and a
// dead one found by the sweep within the lease.
func TestLifecycle(t *testing.T) {
	reg := &sessionreg.Memory{}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a, b := twoReplicas(reg, clock)
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
	route := func(s *Set, p, id string) string { return routeOf(ctx, s, p, id) }
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

// TestPausedRouting: a paused session is served where the call arrives
// (whichever replica paused it), is listed by every replica's Holdings,
// survives its replica's drain, and after one replica claims it the
// others forward to that one.
func TestPausedRouting(t *testing.T) {
	reg := &sessionreg.Memory{}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a, b := twoReplicas(reg, clock)
	ctx := context.Background()
	route := func(s *Set) string { return routeOf(ctx, s, "alice", "sess_1") }
	held := func(s *Set) string {
		hs, err := s.Holdings(ctx, "alice")
		if err != nil {
			return err.Error()
		}
		out := ""
		for _, h := range hs {
			out += fmt.Sprintf("%s@%s paused=%v ", h.SessionID, h.Replica.ID, h.PausedAt != nil)
		}
		return out
	}
	if err := a.Claim(ctx, "alice", "sess_1", sessionreg.Label{Kind: "session"}); err != nil {
		t.Fatal(err)
	}
	a.Pause("alice", "sess_1")
	steps := []struct{ name, got, want string }{
		{"paused: a serves it", route(a), "here"},
		{"paused: b serves it", route(b), "here"},
		{"a lists its paused session", held(a), "sess_1@a paused=true "},
		{"b lists it", held(b), "sess_1@a paused=true "},
	}
	a.Stop()
	steps = append(steps, struct{ name, got, want string }{"a's drain leaves it paused", route(b), "here"})
	if err := b.Claim(ctx, "alice", "sess_1", sessionreg.Label{Kind: "session"}); err != nil {
		t.Fatal(err)
	}
	steps = append(steps, struct{ name, got, want string }{"b resumed it: a forwards", route(a), "forward to b"},
		struct{ name, got, want string }{"b's own", held(b), ""},
		struct{ name, got, want string }{"a claims in vain", fmt.Sprint(errors.Is(a.Claim(ctx, "alice", "sess_1", sessionreg.Label{}), sessionreg.ErrClaimed)), "true"})
	for _, st := range steps {
		if st.got != st.want {
			t.Errorf("%s: %q, want %q", st.name, st.got, st.want)
		}
	}
}

// routeOf says where s sends principal p's calls for session id: "here",
// "forward to <replica>", or the routing error.
func routeOf(ctx context.Context, s *Set, p, id string) string {
	o, remote, err := s.Route(ctx, p, id)
	switch {
	case err != nil:
		return err.Error()
	case remote:
		return "forward to " + o.ID
	}
	return "here"
}

// TestProtocolHeaders: a forwarded request of the stateless protocol
// carries the headers that protocol requires, mirrored from its body; one
// of an older protocol carries none.
func TestProtocolHeaders(t *testing.T) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	for _, c := range []struct {
		method, params string
		want           map[string]string
	}{
		{"tools/call", `{"name":"send_to_session",` + meta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "send_to_session"}},
		{"resources/read", `{"uri":"codexec://sessions/s/files/a.txt",` + meta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/read", "Mcp-Name": "codexec://sessions/s/files/a.txt"}},
		{"tools/call", `{"name":"send_to_session","_meta":{"progressToken":"p"}}`, map[string]string{}},
		{"tools/call", `not json`, map[string]string{}},
	} {
		h := http.Header{}
		protocolHeaders(h, c.method, json.RawMessage(c.params))
		got := map[string]string{}
		for k := range h {
			got[k] = h.Get(k)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", c.method, c.params, diff)
		}
	}
}
