package replicas

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

// The internal hop: the one wire protocol between replicas. A replica that
// receives a request for a session another replica holds hands it to that
// replica:
//
//	POST <owner's address>/internal/forward
//	Content-Type: application/json
//	Accept: application/json, text/event-stream
//	X-Codexec-Principal: the caller's principal
//	X-Codexec-Time:      Unix seconds at the sender
//	X-Codexec-Nonce:     128 random bits (26 base32 characters), new for each request
//	X-Codexec-Target:    the replica id the request is for
//	X-Codexec-Signature: hex HMAC-SHA256, keyed by the shared secret, of
//	                     "codexec-forward\n" time "\n" nonce "\n" target "\n" principal "\n" body
//
//	{"jsonrpc":"2.0","id":1,"method":"tools/call" | "resources/read","params":<the caller's params>}
//
// The receiver refuses with 403 a request without a valid signature, with a
// time more than MaxSkew from its clock, addressed to another replica, or
// carrying a nonce it accepted before (it remembers accepted nonces for
// nonceTTL, at most MaxNonces of them; when that many are unexpired it
// refuses further requests with 503 rather than forget one, which would
// open a replay). So a captured request cannot be replayed, to its target
// or to another replica. Header values hold no newline, so the fields
// cannot be shifted within the signed text.
//
// It then serves the request as that principal through its own MCP server
// (stateless), so it applies the same authorization (the session must be
// that principal's), and answers with an SSE stream: the notifications the
// request sends while it runs (notifications/progress when the caller gave
// a progress token), then the JSON-RPC response, unchanged. When the hop
// request ends early (the sender gave up: its caller cancelled or went
// away), the served request is cancelled (FollowHop). A request that came
// over the hop is marked in its context (Forwarded): it is served where it
// landed and never forwarded or fanned out again, so a request takes at most
// one hop.

// HopPath is where a replica receives forwarded calls.
const HopPath = "/internal/forward"

// MaxSkew is how far a hop request's timestamp may be from the receiver's
// clock.
const MaxSkew = 60 * time.Second

// nonceTTL is how long an accepted nonce is remembered: a request stamped
// up to MaxSkew ahead of the receiver's clock stays acceptable until
// MaxSkew after its stamp, at most 2 × MaxSkew after it was first accepted.
const nonceTTL = 2 * MaxSkew

// MaxNonces bounds the nonces a replica remembers: 131,072 accepted hop
// requests in nonceTTL (about 1,090 per second, sustained), 22.5 MB of heap
// when full (measured).
const MaxNonces = 1 << 17

// Header names of the hop.
const (
	hdrPrincipal = "X-Codexec-Principal"
	hdrTime      = "X-Codexec-Time"
	hdrNonce     = "X-Codexec-Nonce"
	hdrTarget    = "X-Codexec-Target"
	hdrSignature = "X-Codexec-Signature"
)

// ErrHop is a forwarded call that did not get an answer from the owner.
var ErrHop = errors.New("forwarding to the replica holding the session failed")

// RemoteError is the owner's JSON-RPC error answer to a forwarded request
// (a resource it does not have, a malformed request).
type RemoteError struct {
	Replica string
	Code    int
	Message string
	Data    json.RawMessage
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("replica %s: %s", e.Replica, e.Message)
}

// hopFields are the signed fields of one hop request besides its body.
type hopFields struct{ ts, nonce, target, principal string }

// sign is the hop's MAC of one request.
func sign(secret string, f hopFields, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "codexec-forward\n%s\n%s\n%s\n%s\n", f.ts, f.nonce, f.target, f.principal)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// rpcMessage is one JSON-RPC message of the owner's answer: a notification
// (Method set) or the response.
type rpcMessage struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// Notify receives a notification the owner sent while serving a forwarded
// request.
type Notify func(method string, params json.RawMessage)

// Forward sends principal p's request (method and params, as the caller
// sent them) to replica to and returns the result the owner's MCP server
// rendered. notify, when not nil, gets each notification the owner sends
// meanwhile, in order, before Forward returns. Cancelling ctx ends the hop
// request, which cancels the request on the owner. A JSON-RPC error answer
// is a *RemoteError; no answer is ErrHop.
func (s *Set) Forward(ctx context.Context, to sessionreg.Replica, p, method string, params json.RawMessage, notify Notify) (json.RawMessage, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(to.Addr, "/")+HopPath, bytes.NewReader(body))
	if err != nil {
		return nil, hopErr(to, err)
	}
	f := hopFields{ts: strconv.FormatInt(s.o.Now().Unix(), 10), nonce: rand.Text(), target: to.ID, principal: p}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(hdrPrincipal, f.principal)
	req.Header.Set(hdrTime, f.ts)
	req.Header.Set(hdrNonce, f.nonce)
	req.Header.Set(hdrTarget, f.target)
	req.Header.Set(hdrSignature, sign(s.o.Secret, f, body))
	protocolHeaders(req.Header, method, params)
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return nil, hopErr(to, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return nil, fmt.Errorf("%w (replica %s at %s): HTTP %d %s", ErrHop, to.ID, to.Addr, resp.StatusCode, bytes.TrimSpace(b))
	}
	m, err := readAnswer(resp, notify)
	if err != nil {
		return nil, fmt.Errorf("%w (replica %s at %s): %v", ErrHop, to.ID, to.Addr, err)
	}
	if m.Error != nil {
		return nil, &RemoteError{Replica: to.ID, Code: m.Error.Code, Message: m.Error.Message, Data: m.Error.Data}
	}
	return m.Result, nil
}

// metaProtocolVersion is the _meta key in which a request of the stateless
// MCP protocol (2026-07-28 and later) names its protocol version.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// protocolHeaders sets the HTTP headers that the stateless protocol
// requires to mirror a request's body, when params are of such a request
// (their _meta names a protocol version): the version, the method, and the
// tool or resource it acts on. The owner's MCP server checks them as it
// checks a client's; a request of an older protocol needs none.
func protocolHeaders(h http.Header, method string, params json.RawMessage) {
	var p struct {
		Meta map[string]any `json:"_meta"`
		Name string         `json:"name"`
		URI  string         `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	v, _ := p.Meta[metaProtocolVersion].(string)
	if v == "" {
		return
	}
	h.Set("Mcp-Protocol-Version", v)
	h.Set("Mcp-Method", method)
	switch method {
	case "tools/call", "prompts/get":
		h.Set("Mcp-Name", p.Name)
	case "resources/read":
		h.Set("Mcp-Name", p.URI)
	}
}

func hopErr(to sessionreg.Replica, err error) error {
	return fmt.Errorf("%w (replica %s at %s): %v", ErrHop, to.ID, to.Addr, err)
}

// readAnswer reads the owner's answer, an SSE stream of JSON-RPC messages
// or one JSON message, passing notifications to notify, until the
// response.
func readAnswer(resp *http.Response, notify Notify) (rpcMessage, error) {
	var m rpcMessage
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct != "text/event-stream" {
		b, err := io.ReadAll(resp.Body)
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		return m, err
	}
	r := bufio.NewReader(resp.Body)
	for {
		data, err := nextEvent(r)
		if err != nil {
			return m, fmt.Errorf("the answer ended before the response: %w", err)
		}
		if data == nil {
			continue
		}
		m = rpcMessage{}
		if err := json.Unmarshal(data, &m); err != nil {
			return m, fmt.Errorf("unreadable message: %v", err)
		}
		if m.Method == "" {
			return m, nil
		}
		if notify != nil {
			notify(m.Method, m.Params)
		}
	}
}

// nextEvent reads one SSE event and returns its data (its data lines
// joined by newlines; nil for an event without data, such as a priming
// event).
func nextEvent(r *bufio.Reader) ([]byte, error) {
	var data []byte
	seen := false
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			if seen {
				return data, nil
			}
			continue
		}
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // event:, id:, retry: and comments
		}
		if seen {
			data = append(data, '\n')
		}
		data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
		seen = true
	}
}

// hopKey marks the context of a request that came over the hop; its value
// is the hop request's own context.
type hopKey struct{}

// Forwarded reports whether ctx is that of a request another replica
// forwarded here (Handler marked it). Such a request is served here as it
// is: never forwarded again, and a listing answers for this replica only.
func Forwarded(ctx context.Context) bool {
	return ctx.Value(hopKey{}) != nil
}

// FollowHop returns ctx, cancelled as well when the hop request that
// carried it ends (its sender gave up: the caller cancelled the call or
// went away), and the function releasing it. The MCP SDK serves a
// stateless request under a context that outlives the HTTP request, so
// without this a forwarded run would go on after its caller left. For a
// request that did not come over the hop it returns ctx itself.
func FollowHop(ctx context.Context) (context.Context, context.CancelFunc) {
	hop, ok := ctx.Value(hopKey{}).(context.Context)
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(hop, func() { cancel(errors.New("the forwarding replica gave up the call")) })
	return ctx, func() { stop(); cancel(nil) }
}

// Handler authenticates hop requests and passes them to next (the MCP
// server's forwarded-call handler) with the caller's principal in the
// request context (tenant.With), marked as forwarded (Forwarded,
// FollowHop). maxBody bounds a request body.
func (s *Set) Handler(next http.Handler, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
			return
		}
		f := hopFields{ts: r.Header.Get(hdrTime), nonce: r.Header.Get(hdrNonce), target: r.Header.Get(hdrTarget), principal: r.Header.Get(hdrPrincipal)}
		if status, err := s.verify(f, r.Header.Get(hdrSignature), body); err != nil {
			http.Error(w, http.StatusText(status)+": "+err.Error(), status)
			return
		}
		ctx := context.WithValue(tenant.With(r.Context(), f.principal), hopKey{}, r.Context())
		r = r.WithContext(ctx)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// verify checks a hop request: signature, time, target and nonce, in that
// order (only a signed request may take a place in the nonce cache). It
// returns the HTTP status of a refusal.
func (s *Set) verify(f hopFields, sig string, body []byte) (int, error) {
	if s.o.Secret == "" {
		return http.StatusForbidden, errors.New("this replica takes no forwarded calls")
	}
	if !hmac.Equal([]byte(sig), []byte(sign(s.o.Secret, f, body))) {
		return http.StatusForbidden, errors.New("bad signature")
	}
	sec, err := strconv.ParseInt(f.ts, 10, 64)
	if err != nil {
		return http.StatusForbidden, errors.New("no valid " + hdrTime)
	}
	now := s.o.Now()
	if d := now.Sub(time.Unix(sec, 0)); d > MaxSkew || d < -MaxSkew {
		return http.StatusForbidden, errors.New("request time too far from this replica's clock")
	}
	if self := s.Self().ID; f.target != self {
		return http.StatusForbidden, fmt.Errorf("request addressed to replica %q, this is %q", f.target, self)
	}
	if len(f.nonce) < 16 {
		return http.StatusForbidden, errors.New("no valid " + hdrNonce)
	}
	return s.nonces.add(f.nonce, now)
}
