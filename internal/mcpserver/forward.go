package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

// Router finds the replica holding a session and forwards a call to it
// (replicas.Set). With Deps.Replicas nil the server is alone and serves
// every call itself.
type Router interface {
	// Route: ok true when another live replica holds principal p's
	// idOrName; a lost session is a *sessionreg.LostError.
	Route(ctx context.Context, p, idOrName string) (owner sessionreg.Replica, ok bool, err error)
	// Forward sends a tools/call's params to owner as principal p and
	// returns the result it answered.
	Forward(ctx context.Context, owner sessionreg.Replica, p string, params json.RawMessage) (json.RawMessage, error)
}

// sessionArgs names, per tool, the arguments that name a session or
// context; the first one set is the one a call is routed by.
var sessionArgs = map[string][]string{
	"execute_code": {"session_id"}, "send_to_session": {"session_id"}, "close_session": {"session_id"},
	"run_code": {"context_id"}, "stop_context": {"context_id"}, "install_package": {"session_id"},
	"upload_file": {"session_id", "context_id"}, "download_file": {"session_id", "context_id"},
	"list_files": {"session_id", "context_id"},
	// Background runs are claimed by execution id like sessions.
	"get_run": {"execution_id"}, "cancel_run": {"execution_id"},
}

// sessionTarget is the session or context a call names, or "".
func sessionTarget(name string, raw json.RawMessage) string {
	keys := sessionArgs[name]
	if len(keys) == 0 || len(raw) == 0 {
		return ""
	}
	var args map[string]any
	if json.Unmarshal(raw, &args) != nil {
		return ""
	}
	for _, k := range keys {
		if v, ok := args[k].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

// forward sends a call for a session this replica does not hold to the
// replica that does, and answers a call for a lost session with
// SESSION_LOST; it never lets such a call create a new session here. It
// runs inside tenancy, which named the principal.
func (s *Server) forward(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if s.deps.Replicas == nil || !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		id := sessionTarget(call.Params.Name, call.Params.Arguments)
		if id == "" || s.holds(ctx, id) {
			return next(ctx, method, req)
		}
		p := tenant.From(ctx)
		owner, remote, err := s.deps.Replicas.Route(ctx, p, id)
		if err != nil {
			return s.reg.ErrorResultFor(call.Params.Name, err), nil
		}
		if !remote {
			return next(ctx, method, req)
		}
		return s.forwardTo(ctx, owner, p, call)
	}
}

// holds reports whether this replica holds the caller's session idOrName
// (or background run).
func (s *Server) holds(ctx context.Context, idOrName string) bool {
	if s.deps.Runs != nil && s.deps.Runs.Holds(ctx, idOrName) {
		return true
	}
	if s.deps.Sessions == nil {
		return false
	}
	_, err := s.deps.Sessions.Get(ctx, idOrName)
	return err == nil
}

// forwardTo makes the hop and returns the owner's result unchanged.
func (s *Server) forwardTo(ctx context.Context, owner sessionreg.Replica, p string, call *mcp.CallToolRequest) (mcp.Result, error) {
	params, err := json.Marshal(call.Params)
	if err != nil {
		return nil, err
	}
	raw, err := s.deps.Replicas.Forward(ctx, owner, p, params)
	if err != nil {
		slog.Warn("forwarded call failed", "tool", call.Params.Name, "replica", owner.ID, "err", err)
		return s.reg.ErrorResultFor(call.Params.Name, tool.Coded(tool.CodeInternal, "%v", err)), nil
	}
	res := new(mcp.CallToolResult)
	if err := json.Unmarshal(raw, res); err != nil {
		return s.reg.ErrorResultFor(call.Params.Name, tool.Coded(tool.CodeInternal, "replica %s answered an unreadable result: %v", owner.ID, err)), nil
	}
	return res, nil
}

// forwardedToken stands for the principal the hop authenticated (tenant.From
// of the request): the SDK takes a principal only from a verified token.
const forwardedToken = "forwarded"

// ForwardedHandler serves calls forwarded by other replicas: one JSON-RPC
// request per HTTP POST, without an MCP session (stateless, JSON
// response), as the principal the hop put in the request context
// (replicas.Set.Handler authenticates the hop; mount this only behind it).
// The call passes the same middleware as any other: tenancy, drain,
// slots, and the tool's own per-principal lookups.
func (s *Server) ForwardedHandler(maxBody int64) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, Logger: slog.Default(), MaxRequestBodyBytes: maxBody,
	})
	verify := func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: tenant.From(r.Context()), Expiration: time.Now().Add(time.Hour)}, nil
	}
	withToken := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tenant.From(r.Context()) == tenant.Local {
			h.ServeHTTP(w, r) // the stdio-like local principal: no token, as on /mcp without auth
			return
		}
		r.Header.Set("Authorization", "Bearer "+forwardedToken)
		withToken.ServeHTTP(w, r)
	})
}
