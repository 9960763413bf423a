package mcpserver

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure the Streamable HTTP handler.
type HTTPOptions struct {
	// MaxBodyBytes bounds one request body (413 beyond); 0 = SDK default.
	MaxBodyBytes int64
	// SessionTimeout closes MCP sessions that made no request for this
	// long, so clients that vanish without DELETE do not pile up (0 = never).
	SessionTimeout time.Duration
}

// HTTPHandler returns the MCP Streamable HTTP endpoint (mount it at /mcp):
// stateful sessions (Mcp-Session-Id), SSE for server→client messages, and
// stream resumption (Last-Event-ID) from an in-memory event store. The SDK's
// DNS-rebinding guard stays on: a request that arrives on a loopback address
// must carry a loopback Host. A request carrying an auth.TokenInfo (from
// auth.RequireBearerToken) binds its session to TokenInfo.UserID: another
// principal cannot use that session id, and tool handlers see the TokenInfo
// as req.Extra.TokenInfo.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		EventStore:          mcp.NewMemoryEventStore(nil),
		Logger:              slog.Default(),
		MaxRequestBodyBytes: o.MaxBodyBytes,
		SessionTimeout:      o.SessionTimeout,
	})
}

// LiveSessions is the number of connected MCP sessions (clients).
func (s *Server) LiveSessions() int {
	n := 0
	for range s.mcp.Sessions() {
		n++
	}
	return n
}
