package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

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
// idle timeout, failed initialize, eviction); requests still creating one
// count too, so concurrent initializes cannot overshoot the cap.
//
// At the cap a new session does not lock the principal out: the
// principal's least recently used idle session (no request in flight, no
// stream open: a GET's SSE stream is a request in flight for as long as it
// lasts) is closed to make room, as the idle timeout would have closed it
// later; its next request gets 404, on which a Streamable HTTP client
// starts a new session. Only when every one of the principal's sessions is
// busy is the new one refused (429), so a client that crashes in a loop
// without DELETE costs only its own stale sessions.
type sessionCap struct {
	max   int
	live  func() map[string]bool // ids of the sessions still open
	close func(id string)        // closes the session id (as DELETE does)
	now   func() time.Time

	mu       sync.Mutex
	sessions map[string]*capped // session id → the session, for sessions this cap admitted
	busy     map[string]int     // session id → its requests in flight (streams included)
	pending  map[string]int     // principal → session-creating requests in flight
}

// capped is a session the cap admitted.
type capped struct {
	owner string
	last  time.Time // when its last request started or ended
}

func newSessionCap(max int, live func() map[string]bool, closeSession func(string)) *sessionCap {
	return &sessionCap{max: max, live: live, close: closeSession, now: time.Now,
		sessions: map[string]*capped{}, busy: map[string]int{}, pending: map[string]int{}}
}

// wrap enforces the cap in front of the SDK's handler next.
func (c *sessionCap) wrap(next http.Handler) http.Handler {
	if c.max <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(sessionIDHeader); id != "" {
			c.enter(id)
			defer c.leave(id)
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodPost || !isInitialize(r) {
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

// enter marks a request of session id in flight.
func (c *sessionCap) enter(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy[id]++
	if s := c.sessions[id]; s != nil {
		s.last = c.now()
	}
}

// leave ends a request of enter.
func (c *sessionCap) leave(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy[id]--; c.busy[id] <= 0 {
		delete(c.busy, id)
	}
	if s := c.sessions[id]; s != nil {
		s.last = c.now()
	}
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

// admit reserves a session for p. When p holds max already, it closes p's
// least recently used idle session to make room; when all of them are busy
// it refuses and returns how many p holds.
func (c *sessionCap) admit(p string) (int, bool) {
	c.mu.Lock()
	open, victim := c.heldLocked(p)
	if open >= c.max && victim == "" {
		c.mu.Unlock()
		return open, false
	}
	if open >= c.max {
		delete(c.sessions, victim)
	}
	c.pending[p]++
	c.mu.Unlock()
	if victim != "" && open >= c.max {
		slog.Info("closed an idle MCP session to admit a new one: principal at its cap",
			"principal", p, "closed", victim, "max", c.max)
		c.close(victim)
	}
	return open, true
}

// heldLocked forgets the sessions that closed and returns how many p holds
// (sessions and initializes in flight) and the id of p's least recently
// used idle session ("" when none is idle).
func (c *sessionCap) heldLocked(p string) (int, string) {
	live := c.live()
	open := c.pending[p]
	var victim string
	var oldest time.Time
	for id, s := range c.sessions {
		switch {
		case !live[id]:
			delete(c.sessions, id)
		case s.owner == p:
			open++
			if c.busy[id] == 0 && (victim == "" || s.last.Before(oldest)) {
				victim, oldest = id, s.last
			}
		}
	}
	return open, victim
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
		c.sessions[sessionID] = &capped{owner: p, last: c.now()}
	}
}

// refuse answers a session-creating request over the cap with every
// session busy: 429 with a JSON-RPC error naming the cap, its setting and
// how to free a slot.
func (c *sessionCap) refuse(w http.ResponseWriter, r *http.Request, p string, open int) {
	slog.Warn("refused a new MCP session: principal at its cap, every session busy", "principal", p, "open", open, "max", c.max)
	msg := fmt.Sprintf("too many MCP sessions: principal %q has %d open, the most allowed "+
		"(CODEXEC_MAX_MCP_SESSIONS_PER_PRINCIPAL=%d), and every one is busy (a request in flight or a stream open), "+
		"so none could be closed to make room; close one (HTTP DELETE with its %s), retry once a request ends, "+
		"or raise CODEXEC_MAX_MCP_SESSIONS_PER_PRINCIPAL", p, open, c.max, sessionIDHeader)
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
