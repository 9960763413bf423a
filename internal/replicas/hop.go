package replicas

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

// The internal hop: a replica that receives a call for a session another
// replica holds POSTs the call's tools/call params, as one JSON-RPC
// request, to that replica's HopPath. The request carries the original
// caller's principal and an HMAC-SHA256, keyed by the shared secret, over
// a timestamp, the principal and the body; the receiver refuses a request
// without a valid signature or more than MaxSkew away from its clock, then
// serves the call as that principal through its own MCP server (stateless,
// JSON response), so it applies the same authorization: the session must
// belong to that principal. The result comes back unchanged.

// HopPath is where a replica receives forwarded calls.
const HopPath = "/internal/forward"

// MaxSkew is how far a hop request's timestamp may be from the receiver's
// clock; it bounds the replay window of a captured request.
const MaxSkew = 60 * time.Second

// Header names of the hop.
const (
	hdrPrincipal = "X-Codexec-Principal"
	hdrTime      = "X-Codexec-Time"
	hdrSignature = "X-Codexec-Signature"
)

// ErrHop is a forwarded call that did not get an answer from the owner.
var ErrHop = errors.New("forwarding to the replica holding the session failed")

// sign is the hop's MAC of one request.
func sign(secret, ts, principal string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "codexec-forward\n%s\n%s\n", ts, principal)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// rpcResponse is the JSON-RPC answer of the owner.
type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Forward sends principal p's tools/call params to replica to and returns
// the call's result, as the owner's MCP server rendered it.
func (s *Set) Forward(ctx context.Context, to sessionreg.Replica, p string, params json.RawMessage) (json.RawMessage, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(to.Addr, "/")+HopPath, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w (replica %s at %s): %v", ErrHop, to.ID, to.Addr, err)
	}
	ts := strconv.FormatInt(s.o.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(hdrPrincipal, p)
	req.Header.Set(hdrTime, ts)
	req.Header.Set(hdrSignature, sign(s.o.Secret, ts, p, body))
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w (replica %s at %s): %v", ErrHop, to.ID, to.Addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w (replica %s at %s): HTTP %d %s %v", ErrHop, to.ID, to.Addr, resp.StatusCode, bytes.TrimSpace(b[:min(len(b), 200)]), err)
	}
	var r rpcResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w (replica %s): unreadable answer: %v", ErrHop, to.ID, err)
	}
	if r.Error != nil {
		return nil, fmt.Errorf("replica %s: %s", to.ID, r.Error.Message)
	}
	return r.Result, nil
}

// Handler authenticates hop requests and passes them to next (the MCP
// server's forwarded-call handler) with the caller's principal in the
// request context (tenant.With). maxBody bounds a request body.
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
		p := r.Header.Get(hdrPrincipal)
		if err := s.verify(r.Header.Get(hdrTime), p, r.Header.Get(hdrSignature), body); err != nil {
			http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
		r = r.WithContext(tenant.With(r.Context(), p))
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// verify checks a hop request's timestamp and signature.
func (s *Set) verify(ts, p, sig string, body []byte) error {
	if s.o.Secret == "" {
		return errors.New("this replica takes no forwarded calls")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("no valid " + hdrTime)
	}
	if d := s.o.Now().Sub(time.Unix(sec, 0)); d > MaxSkew || d < -MaxSkew {
		return errors.New("request time too far from this replica's clock")
	}
	if !hmac.Equal([]byte(sig), []byte(sign(s.o.Secret, ts, p, body))) {
		return errors.New("bad signature")
	}
	return nil
}
