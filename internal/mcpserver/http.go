package mcpserver

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/tenant"
)

// HTTPOptions configure the Streamable HTTP handler.
type HTTPOptions struct {
	// MaxBodyBytes bounds one request body (413 beyond); 0 = SDK default.
	MaxBodyBytes int64
	// SessionTimeout closes MCP sessions that made no request for this
	// long, so clients that vanish without DELETE do not pile up (0 = never).
	SessionTimeout time.Duration
	// MaxSessionsPerPrincipal bounds the MCP sessions one principal holds
	// open; a request that would open one more closes the principal's
	// least recently used idle session, or gets 429 when all are busy
	// (0 = unlimited).
	MaxSessionsPerPrincipal int
}

// HTTPHandler returns the MCP Streamable HTTP endpoint (mount it at /mcp).
// It speaks both generations of the protocol on the one URL:
//
//   - Clients of the stateless protocol (2026-07-28 and later: every
//     request carries its protocol version, in the MCP-Protocol-Version
//     header and the request's _meta, and no Mcp-Session-Id) are served one
//     request per POST, without an MCP session: the response and the
//     request's notifications (progress) come back on that POST's stream,
//     and closing it cancels the request. A notifications/cancelled naming
//     a request id cancels that principal's request in flight with that id.
//   - Older clients keep stateful sessions (initialize, Mcp-Session-Id), SSE
//     for server→client messages, and stream resumption (Last-Event-ID) from
//     an in-memory event store.
//
// Either way the SDK's DNS-rebinding guard stays on: a request that arrives
// on a loopback address must carry a loopback Host. A request carrying an
// auth.TokenInfo (from auth.RequireBearerToken) runs as TokenInfo.UserID:
// tool handlers see the TokenInfo as req.Extra.TokenInfo, and another
// principal cannot use a session it opened. A principal holds at most
// o.MaxSessionsPerPrincipal stateful sessions at once (see sessionCap);
// stateless requests open none.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	stateful := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		EventStore:          mcp.NewMemoryEventStore(nil),
		Logger:              slog.Default(),
		MaxRequestBodyBytes: o.MaxBodyBytes,
		SessionTimeout:      o.SessionTimeout,
	})
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		Logger:                       slog.Default(),
		MaxRequestBodyBytes:          o.MaxBodyBytes,
		PropagateRequestCancellation: true,
	})
	sessions := newSessionCap(o.MaxSessionsPerPrincipal, s.liveSessionIDs, s.closeSession).wrap(stateful)
	sessionless := newStatelessCalls().wrap(stateless)
	route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isStateless(r) {
			sessionless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
	if s.tasks == nil {
		return route
	}
	maxBody := o.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	// Tasks are answered in front of both: with or without a session.
	return s.tasks.Handler(route, maxBody, httpPrincipal)
}

// statelessVersion is the first protocol revision without sessions.
const statelessVersion = "2026-07-28"

// protocolVersionHeader carries a request's protocol version over HTTP.
const protocolVersionHeader = "Mcp-Protocol-Version"

// isStateless reports whether r is a request of the stateless protocol: it
// names a revision from statelessVersion on (revisions are dates, so they
// compare as strings) and belongs to no session. The SDK recognises the new
// protocol by the same header, and checks that it matches the version in
// the request's _meta.
func isStateless(r *http.Request) bool {
	v := r.Header.Get(protocolVersionHeader)
	return v >= statelessVersion && r.Header.Get(sessionIDHeader) == ""
}

// closeSession closes the connected MCP session id, as a DELETE does: the
// Streamable HTTP handler forgets it (its later requests get 404) and
// drops its stored events.
func (s *Server) closeSession(id string) {
	for ss := range s.mcp.Sessions() {
		if ss.ID() == id {
			_ = ss.Close()
			return
		}
	}
}

// liveSessionIDs is the set of the ids of the connected MCP sessions.
func (s *Server) liveSessionIDs() map[string]bool {
	ids := map[string]bool{}
	for ss := range s.mcp.Sessions() {
		ids[ss.ID()] = true
	}
	return ids
}

// LiveSessions is the number of MCP sessions clients hold open over HTTP.
// A stateless request (or a call forwarded by another replica) is served on
// a connection of its own that has no session id and lasts only as long as
// the request: those are not sessions a client holds, and are not counted.
func (s *Server) LiveSessions() int {
	n := 0
	for ss := range s.mcp.Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	return n
}

// FilesHandler serves the single-use URLs that upload_file and
// download_file return for transfer "url" (mount it at transfer.PathPrefix
// behind the same bearer authentication as /mcp), or nil when the server
// issues none. A request's principal is decided as tenancy decides a tool
// call's: the verified token's user, tenant.Local without auth; a URL
// serves only the principal it was issued to.
func (s *Server) FilesHandler() http.Handler {
	if s.files == nil {
		return nil
	}
	return s.files.TransferHandler(func(r *http.Request) string {
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			return ti.UserID // "" matches no URL: tenancy issues none to nobody
		}
		return tenant.Local
	})
}
