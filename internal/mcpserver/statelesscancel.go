package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
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
	mu       sync.Mutex
	inFlight map[callKey][]*trackedCall
}

// trackedCall is one request in flight; its address tells apart requests
// with the same key.
type trackedCall struct{ cancel context.CancelCauseFunc }

// callKey names a request in flight: its principal and its JSON-RPC id as
// sent (compact JSON, so 7 and "7" differ as they do on the wire).
type callKey struct{ principal, id string }

func newStatelessCalls() *statelessCalls {
	return &statelessCalls{inFlight: map[callKey][]*trackedCall{}}
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

// maxCallPeek bounds how much of a stateless request's body is read to
// find its id and method (a large tools/call, say an upload, is not held
// twice in memory for it).
const maxCallPeek = 64 << 10

// peek reads the start of r's body (leaving the body to be read again
// whole) and decodes the members of the one JSON-RPC message there, in
// order, until it has what wrap needs: the method and id (and, for
// notifications/cancelled, the params). ok is false for anything else (a
// batch, not JSON, a body whose id or method comes after a long member),
// which next judges on its own; such a request is still cancelled by
// closing it.
func (c *statelessCalls) peek(r *http.Request) (rpcMessage, bool) {
	var msg rpcMessage
	if r.Method != http.MethodPost || r.Body == nil {
		return msg, false
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, maxCallPeek))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil {
		return msg, false
	}
	return decodeMessage(head)
}

// decodeMessage decodes the members of the JSON-RPC message at the start
// of head (which may be cut short) that name a request; see peek.
func decodeMessage(head []byte) (rpcMessage, bool) {
	var msg rpcMessage
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return msg, false
	}
	complete := func() bool {
		return msg.Method != "" && msg.Method != "notifications/cancelled" && (len(msg.ID) > 0 || strings.HasPrefix(msg.Method, "notifications/"))
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return msg, complete()
		}
		var dst any = new(json.RawMessage)
		switch key {
		case "id":
			dst = &msg.ID
		case "method":
			dst = &msg.Method
		case "params":
			if complete() {
				return msg, true // no need to read what may be large
			}
			dst = &msg.Params
		}
		if err := dec.Decode(dst); err != nil {
			return msg, complete()
		}
	}
	return msg, msg.Method != ""
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
