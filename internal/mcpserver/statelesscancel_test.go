package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// TestIsStateless: a request is served statelessly when it names the
// stateless revision or a later one and carries no session id.
func TestIsStateless(t *testing.T) {
	for _, c := range []struct {
		version, session string
		want             bool
	}{
		{"2026-07-28", "", true},
		{"2027-01-01", "", true},
		{"2026-07-28", "sess-1", false},
		{"2025-11-25", "", false},
		{"", "", false},
	} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		if c.version != "" {
			r.Header.Set(protocolVersionHeader, c.version)
		}
		if c.session != "" {
			r.Header.Set(sessionIDHeader, c.session)
		}
		if got := isStateless(r); got != c.want {
			t.Errorf("version %q session %q: stateless %v, want %v", c.version, c.session, got, c.want)
		}
	}
}

// TestStatelessCallsCancel: a notifications/cancelled cancels the one
// request in flight of the same principal with that id, and nothing else:
// not another principal's, not an id of another JSON type, not one of two
// requests sharing the id.
func TestStatelessCallsCancel(t *testing.T) {
	for _, c := range []struct {
		name            string
		calls           []string // "principal id" of the requests in flight
		cancelBy, rawID string
		want            []bool // per call: cancelled by the notification
	}{
		{"own request", []string{"alice 7"}, "alice", "7", []bool{true}},
		{"another principal's", []string{"alice 7"}, "bob", "7", []bool{false}},
		{"string id vs number", []string{`alice "7"`}, "alice", "7", []bool{false}},
		{"ambiguous id", []string{"alice 7", "alice 7"}, "alice", "7", []bool{false, false}},
		{"only the named one", []string{"alice 7", "alice 8"}, "alice", "8", []bool{false, true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := trackedHandler(t)
			done := make([]chan error, len(c.calls))
			for i, call := range c.calls {
				who, id, _ := strings.Cut(call, " ")
				done[i] = make(chan error, 1)
				go func() {
					done[i] <- h.serve(who, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"x"}}`)
				}()
				<-h.started
			}
			if err := h.serve(c.cancelBy, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+c.rawID+`}}`); err != nil {
				t.Fatalf("the notification itself: %v", err)
			}
			got := make([]bool, len(done))
			for i := range done {
				got[i] = errors.Is(<-done[i], errCancelledByClient)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("cancelled (-want +got):\n%s", diff)
			}
		})
	}
}

// cancelHarness serves statelessCalls in front of a handler that holds each
// request until its context ends (at most wait) and answers the cause.
type cancelHarness struct {
	h       http.Handler
	started chan struct{}
}

const wait = 500 * time.Millisecond

func trackedHandler(t *testing.T) *cancelHarness {
	t.Helper()
	c := &cancelHarness{started: make(chan struct{}, 8)}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("X-Kind"), "notification") {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		c.started <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-time.After(wait):
		}
		if cause := context.Cause(r.Context()); cause != nil {
			_, _ = w.Write([]byte(cause.Error()))
		}
	})
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	c.h = auth.RequireBearerToken(verify, nil)(newStatelessCalls().wrap(next))
	return c
}

// serve sends body as principal who and returns, for a request, the cause
// of its context's end (nil: it ran to the end uncancelled).
func (c *cancelHarness) serve(who, body string) error {
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+who)
	if strings.Contains(body, "notifications/") {
		r.Header.Set("X-Kind", "notification")
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, r)
		if rec.Code != http.StatusAccepted {
			return errors.New(rec.Body.String())
		}
		return nil
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, r)
	switch body := rec.Body.String(); body {
	case "":
		return nil
	case errCancelledByClient.Error():
		return errCancelledByClient
	default:
		return errors.New(body)
	}
}

// TestDecodeMessage: what peek finds in the start of a body, which may be
// cut short after maxCallPeek bytes.
func TestDecodeMessage(t *testing.T) {
	big := `{"name":"execute_code","arguments":{"code":"` + strings.Repeat("a", maxCallPeek) + `"}}`
	cut := func(s string) string { return s[:min(len(s), maxCallPeek)] }
	for _, c := range []struct {
		name, body     string
		method, id, rq string // rq: params.requestId
		ok             bool
	}{
		{"a call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`, "tools/call", "7", "", true},
		{"a large call, cut", cut(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":` + big + `}`), "tools/call", `"a"`, "", true},
		{"a cancel", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}}`, "notifications/cancelled", "", "7", true},
		{"a cancel, params first", `{"params":{"requestId":"r"},"method":"notifications/cancelled","jsonrpc":"2.0"}`, "notifications/cancelled", "", `"r"`, true},
		{"another notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "notifications/initialized", "", "", true},
		{"large params before the method", cut(`{"jsonrpc":"2.0","params":` + big + `,"id":1,"method":"tools/call"}`), "", "", "", false},
		{"a response", `{"jsonrpc":"2.0","id":1,"result":{}}`, "", "1", "", false},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "", "", "", false},
		{"not JSON", `hello`, "", "", "", false},
	} {
		msg, ok := decodeMessage([]byte(c.body))
		var rq string
		if msg.Params != nil {
			rq = compactID(msg.Params.RequestID)
		}
		got := []any{msg.Method, compactID(msg.ID), rq, ok}
		if diff := cmp.Diff([]any{c.method, c.id, c.rq, c.ok}, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}
