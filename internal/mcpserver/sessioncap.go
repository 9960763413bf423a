package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/codexec/codexec/internal/tenant"
)

// sessionIDHeader names a Streamable HTTP session; a POST without it
// creates one.
const sessionIDHeader = "Mcp-Session-Id"

// codeTooManySessions is the JSON-RPC error code of a refused session (one
// of the codes JSON-RPC leaves to servers).
const codeTooManySessions = -32000

// sessionCap bounds the MCP sessions one principal holds open over
// Streamable HTTP, so one token cannot grow the server's memory without
// bound by opening sessions faster than the idle timeout closes them. A
// session counts from the request that creates it until it closes (DELETE,
// idle timeout, failed initialize); requests still creating one count too,
// so concurrent initializes cannot overshoot the cap.
type sessionCap struct {
	max  int
	live func() map[string]bool // ids of the sessions still open

	mu      sync.Mutex
	owner   map[string]string // session id → principal, for sessions this cap admitted
	pending map[string]int    // principal → session-creating requests in flight
}

func newSessionCap(max int, live func() map[string]bool) *sessionCap {
	return &sessionCap{max: max, live: live, owner: map[string]string{}, pending: map[string]int{}}
}

// wrap enforces the cap in front of the SDK's handler next.
func (c *sessionCap) wrap(next http.Handler) http.Handler {
	if c.max <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get(sessionIDHeader) != "" || !isInitialize(r) {
			next.ServeHTTP(w, r)
			return
		}
		p := requestPrincipal(r)
		if open, ok := c.admit(p); !ok {
			c.refuse(w, r, p, open)
			return
		}
		defer func() { c.settle(p, w.Header().Get(sessionIDHeader)) }()
		next.ServeHTTP(w, r)
	})
}

// isInitialize reports whether r's body is an initialize request, the only
// message that opens a session; r.Body is left to be read again. Clients of
// the newer, sessionless protocol first send other requests without a
// session id (the go-sdk client probes that way before it initializes):
// those open no session, and counting them while they finish made the
// client's own initialize look like one session too many. A body that does
// not parse as one JSON-RPC request within the peek counts as initialize,
// so the cap errs on the side of refusing.
func isInitialize(r *http.Request) bool {
	head, _ := io.ReadAll(io.LimitReader(r.Body, maxMethodPeek))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	var m struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(head, &m) != nil {
		return true
	}
	return m.Method == "initialize"
}

// maxMethodPeek bounds how much of a session-less request's body is read
// to find its method (an initialize request is a few hundred bytes).
const maxMethodPeek = 64 << 10

// requestPrincipal is the principal of an HTTP request, as tenancy decides
// it for the request's MCP messages.
func requestPrincipal(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return tenant.Local
}

// admit reserves a session for p unless p holds max already; it returns
// how many p holds.
func (c *sessionCap) admit(p string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	live := c.live()
	open := c.pending[p]
	for id, owner := range c.owner {
		switch {
		case !live[id]:
			delete(c.owner, id)
		case owner == p:
			open++
		}
	}
	if open >= c.max {
		return open, false
	}
	c.pending[p]++
	return open, true
}

// settle ends a reservation: the session the request created, if any, now
// counts as open (until it closes).
func (c *sessionCap) settle(p, sessionID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[p]--; c.pending[p] <= 0 {
		delete(c.pending, p)
	}
	if sessionID != "" {
		c.owner[sessionID] = p
	}
}

// refuse answers a session-creating request over the cap: 429 with a
// JSON-RPC error naming the cap, its setting and how to free a slot.
func (c *sessionCap) refuse(w http.ResponseWriter, r *http.Request, p string, open int) {
	slog.Warn("refused a new MCP session: principal at its cap", "principal", p, "open", open, "max", c.max)
	msg := fmt.Sprintf("too many MCP sessions: principal %q has %d open, the most allowed "+
		"(CODEXEC_MAX_MCP_SESSIONS_PER_PRINCIPAL=%d); close one (HTTP DELETE with its %s) "+
		"or wait for idle ones to expire (CODEXEC_SESSION_IDLE_TIMEOUT_MS)", p, open, c.max, sessionIDHeader)
	body, _ := json.Marshal(rpcErrorReply{JSONRPC: "2.0", ID: requestID(r), Error: rpcError{codeTooManySessions, msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(body)
}

// rpcErrorReply is a JSON-RPC error response.
type rpcErrorReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcError        `json:"error"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// maxIDPeek bounds how much of a refused request's body is read to find
// its id.
const maxIDPeek = 64 << 10

// requestID is the id of the JSON-RPC request in r's body when it is a
// string or a number, else null.
func requestID(r *http.Request) json.RawMessage {
	var m struct{ ID json.RawMessage }
	data, _ := io.ReadAll(io.LimitReader(r.Body, maxIDPeek))
	if json.Unmarshal(data, &m) != nil || len(m.ID) == 0 || bytes.ContainsAny(m.ID[:1], "{[tfn") {
		return json.RawMessage("null")
	}
	return m.ID
}
