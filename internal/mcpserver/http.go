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

// HTTPHandler returns the MCP Streamable HTTP endpoint (mount it at /mcp):
// stateful sessions (Mcp-Session-Id), SSE for server→client messages, and
// stream resumption (Last-Event-ID) from an in-memory event store. The SDK's
// DNS-rebinding guard stays on: a request that arrives on a loopback address
// must carry a loopback Host. A request carrying an auth.TokenInfo (from
// auth.RequireBearerToken) binds its session to TokenInfo.UserID: another
// principal cannot use that session id, and tool handlers see the TokenInfo
// as req.Extra.TokenInfo. A principal holds at most
// o.MaxSessionsPerPrincipal sessions at once (see sessionCap).
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		EventStore:          mcp.NewMemoryEventStore(nil),
		Logger:              slog.Default(),
		MaxRequestBodyBytes: o.MaxBodyBytes,
		SessionTimeout:      o.SessionTimeout,
	})
	capped := newSessionCap(o.MaxSessionsPerPrincipal, s.liveSessionIDs, s.closeSession).wrap(h)
	if s.tasks == nil {
		return capped
	}
	maxBody := o.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	return s.tasks.Handler(capped, maxBody, httpPrincipal)
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

// LiveSessions is the number of connected MCP sessions (clients).
func (s *Server) LiveSessions() int {
	n := 0
	for range s.mcp.Sessions() {
		n++
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
