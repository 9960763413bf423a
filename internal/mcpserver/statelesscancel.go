package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errCancelledByClient is the cause of a stateless request's cancellation
// by a notifications/cancelled that named it.
var errCancelledByClient = errors.New("the client cancelled the request (notifications/cancelled)")

// statelessCalls lets a client of the stateless protocol cancel a request
// with notifications/cancelled, as it can within a session. Without a
// session the notification comes in a POST of its own, which the SDK serves
// on a fresh connection that knows no requests; so this remembers each
// stateless request in flight by its principal and JSON-RPC id, and cancels
// the one a notification names. Clients choose ids, so two clients of one
// principal may have the same id in flight: such a notification is
// ambiguous and cancels nothing (either client can still cancel by closing
// its request's stream). A principal can only cancel its own requests.
type statelessCalls struct {
	peekMax int64 // bodies longer than this are passed on unread (the SDK refuses them)

	mu       sync.Mutex
	inFlight map[callKey][]*trackedCall
}

// trackedCall is one request in flight; its address tells apart requests
// with the same key.
type trackedCall struct{ cancel context.CancelCauseFunc }

// callKey names a request in flight: its principal and its JSON-RPC id as
// sent (compact JSON, so 7 and "7" differ as they do on the wire).
type callKey struct{ principal, id string }

// newStatelessCalls tracks requests whose bodies are at most maxBody bytes
// (the endpoint's body cap; 0 or less: the SDK's default).
func newStatelessCalls(maxBody int64) *statelessCalls {
	if maxBody <= 0 {
		maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	return &statelessCalls{peekMax: maxBody, inFlight: map[callKey][]*trackedCall{}}
}

// wrap tracks the requests served by next and applies the cancellations
// that arrive for them.
func (c *statelessCalls) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		msg, ok := c.peek(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		p := requestPrincipal(r)
		if msg.Method == "notifications/cancelled" && msg.Params != nil {
			c.cancel(callKey{p, compactID(msg.Params.RequestID)})
		}
		if len(msg.ID) == 0 || msg.Method == "" {
			next.ServeHTTP(w, r) // a notification or a response: nothing to cancel later
			return
		}
		ctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		key, call := callKey{p, compactID(msg.ID)}, &trackedCall{cancel}
		c.add(key, call)
		defer c.remove(key, call)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// rpcMessage is the part of a JSON-RPC message that names a request.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params *struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// peek reads r's body (leaving it to be read again) and decodes the one
// JSON-RPC message in it; ok is false for anything else (a batch, a body
// over the cap, not JSON), which next judges on its own.
func (c *statelessCalls) peek(r *http.Request) (rpcMessage, bool) {
	var msg rpcMessage
	if r.Method != http.MethodPost || r.Body == nil {
		return msg, false
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, c.peekMax+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil || int64(len(head)) > c.peekMax {
		return msg, false
	}
	return msg, json.Unmarshal(head, &msg) == nil
}

// compactID is a JSON-RPC id as comparable text ("" for none).
func compactID(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return ""
	}
	return b.String()
}

func (c *statelessCalls) add(k callKey, call *trackedCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight[k] = append(c.inFlight[k], call)
}

// remove forgets the request of add.
func (c *statelessCalls) remove(k callKey, call *trackedCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.inFlight[k]
	for i := range list {
		if list[i] == call {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(c.inFlight, k)
		return
	}
	c.inFlight[k] = list
}

// cancel cancels the one request in flight under k; none when no request
// or more than one has that key.
func (c *statelessCalls) cancel(k callKey) {
	if k.id == "" {
		return
	}
	c.mu.Lock()
	n := len(c.inFlight[k])
	var target *trackedCall
	if n == 1 {
		target = c.inFlight[k][0]
	}
	c.mu.Unlock()
	if target != nil {
		target.cancel(errCancelledByClient)
	} else if n > 1 {
		slog.Info("ignored a cancellation: the principal has several requests in flight with that id",
			"principal", k.principal, "id", k.id, "requests", n)
	}
}
