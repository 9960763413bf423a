package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/mcpserver/filetools"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/replicas"
	"github.com/codexec/codexec/internal/sessionckpt"
	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
	"github.com/codexec/codexec/internal/tracing"
)

// Router finds the replica holding a session and forwards a request to it
// (replicas.Set). With Deps.Replicas nil the server is alone and serves
// every request itself.
type Router interface {
	// Route: ok true when another live replica holds principal p's
	// idOrName; a lost session is a *sessionreg.LostError.
	Route(ctx context.Context, p, idOrName string) (owner sessionreg.Replica, ok bool, err error)
	// Forward sends a request (method, params) to owner as principal p and
	// returns the result it answered, passing the notifications it sends
	// meanwhile to notify (replicas.Set.Forward).
	Forward(ctx context.Context, owner sessionreg.Replica, p, method string, params json.RawMessage, notify replicas.Notify) (json.RawMessage, error)
	// Holdings lists principal p's sessions (and background runs) that
	// other replicas hold or held (replicas.Set.Holdings).
	Holdings(ctx context.Context, p string) ([]sessionreg.Owner, error)
	// Self is this replica.
	Self() sessionreg.Replica
}

// sessionArgs names, per tool, the arguments that name a session or
// context; the first one set is the one a call is routed by.
var sessionArgs = map[string][]string{
	"execute_code": {"session_id"}, "send_to_session": {"session_id"}, "close_session": {"session_id"},
	"run_code": {"context_id"}, "stop_context": {"context_id"}, "install_package": {"session_id"},
	"upload_file": {"session_id", "context_id"}, "download_file": {"session_id", "context_id"},
	"list_files":    {"session_id", "context_id"},
	"pause_session": {"session_id"}, "resume_session": {"session_id"}, "fork_session": {"session_id"},
	// Background runs are claimed by execution id like sessions.
	"get_run": {"execution_id"}, "cancel_run": {"execution_id"},
}

// runTools are the tools routed by an execution id.
var runTools = map[string]bool{"get_run": true, "cancel_run": true}

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

// forward sends a tool call or a resources/read for a session this replica
// does not hold to the replica that does, and answers one for a lost
// session as lost; it never lets such a request create a new session here.
// A request that came over the hop is served here, cancelled when its hop
// ends. It runs inside tenancy, which named the principal.
func (s *Server) forward(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if s.deps.Replicas == nil {
			return next(ctx, method, req)
		}
		if replicas.Forwarded(ctx) {
			ctx, release := replicas.FollowHop(ctx)
			defer release()
			return next(ctx, method, req)
		}
		switch r := req.(type) {
		case *mcp.CallToolRequest:
			if r.Params != nil {
				return s.forwardCall(ctx, method, r, next)
			}
		case *mcp.ReadResourceRequest:
			if r.Params != nil {
				return s.forwardRead(ctx, method, r, next)
			}
		}
		return next(ctx, method, req)
	}
}

// forwardCall routes a tool call by the session or context it names.
func (s *Server) forwardCall(ctx context.Context, method string, call *mcp.CallToolRequest, next mcp.MethodHandler) (mcp.Result, error) {
	id := sessionTarget(call.Params.Name, call.Params.Arguments)
	if id == "" || s.holds(ctx, id) {
		return next(ctx, method, call)
	}
	p := tenant.From(ctx)
	owner, remote, err := s.route(ctx, p, id, !keepsPaused[call.Params.Name])
	if lost := (*sessionreg.LostError)(nil); errors.As(err, &lost) && runTools[call.Params.Name] {
		// A run whose replica stopped: the runs service answers for it
		// here (its stored result, or status lost), as a restarted
		// server does for a run it never finished.
		return next(ctx, method, call)
	}
	if err != nil {
		return s.reg.ErrorResultFor(call.Params.Name, err), nil
	}
	if !remote {
		return next(ctx, method, call)
	}
	return s.forwardTo(ctx, owner, p, call)
}

// forwardRead routes a resources/read of a session's file
// (codexec://sessions/{id}/files/…) by that session; kept artifacts are in
// the shared store, read here.
func (s *Server) forwardRead(ctx context.Context, method string, req *mcp.ReadResourceRequest, next mcp.MethodHandler) (mcp.Result, error) {
	id := filetools.SessionOfURI(req.Params.URI)
	if id == "" || s.holds(ctx, id) {
		return next(ctx, method, req)
	}
	p := tenant.From(ctx)
	owner, remote, err := s.route(ctx, p, id, true)
	if lost := (*sessionreg.LostError)(nil); errors.As(err, &lost) {
		return nil, &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: lost.Error()}
	}
	if err != nil {
		return nil, err
	}
	if !remote {
		return next(ctx, method, req)
	}
	ctx, span := startForward(ctx, owner)
	fp := *req.Params
	fp.Meta = withTrace(ctx, fp.Meta)
	params, err := json.Marshal(&fp)
	if err != nil {
		span.End()
		return nil, err
	}
	raw, err := s.deps.Replicas.Forward(ctx, owner, p, method, params, nil)
	tracing.End(span, err)
	if re := (*replicas.RemoteError)(nil); errors.As(err, &re) {
		return nil, &jsonrpc.Error{Code: int64(re.Code), Message: re.Message, Data: re.Data}
	}
	if err != nil {
		slog.Warn("forwarded resources/read failed", "replica", owner.ID, "err", err)
		return nil, err
	}
	res := new(mcp.ReadResourceResult)
	if err := json.Unmarshal(raw, res); err != nil {
		return nil, err
	}
	return res, nil
}

// holds reports whether this replica holds the caller's session idOrName
// (or background run), live or paused, without resuming it.
func (s *Server) holds(ctx context.Context, idOrName string) bool {
	if s.deps.Runs != nil && s.deps.Runs.Holds(ctx, idOrName) {
		return true
	}
	return s.deps.Sessions != nil && s.deps.Sessions.Here(ctx, idOrName)
}

// keepsPaused are the tools that serve a paused session without resuming
// it (the session Manager claims it for a close).
var keepsPaused = map[string]bool{"close_session": true, "stop_context": true, "pause_session": true, "fork_session": true}

// route is Replicas.Route, and when no live replica holds idOrName (it is
// paused, or unknown) and resume is set, it resumes a paused session here
// first: when another replica claimed it first, the call goes to that one.
func (s *Server) route(ctx context.Context, p, idOrName string, resume bool) (sessionreg.Replica, bool, error) {
	owner, remote, err := s.deps.Replicas.Route(ctx, p, idOrName)
	if err != nil || remote || !resume || s.deps.Sessions == nil {
		return owner, remote, err
	}
	if _, err := s.deps.Sessions.Get(ctx, idOrName); errors.Is(err, sessionckpt.ErrHeldElsewhere) {
		return s.deps.Replicas.Route(ctx, p, idOrName)
	}
	return owner, remote, err
}

// forwardTo makes the hop and returns the owner's result unchanged,
// relaying the owner's progress notifications to the caller under the
// caller's progress token.
func (s *Server) forwardTo(ctx context.Context, owner sessionreg.Replica, p string, call *mcp.CallToolRequest) (mcp.Result, error) {
	ctx, span := startForward(ctx, owner)
	fp := *call.Params
	fp.Meta = withTrace(ctx, fp.Meta)
	params, err := json.Marshal(&fp)
	if err != nil {
		span.End()
		return nil, err
	}
	raw, err := s.deps.Replicas.Forward(ctx, owner, p, "tools/call", params, relayProgress(ctx, call))
	tracing.End(span, err)
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

// relayProgress re-sends the owner's notifications/progress for call to
// the caller's MCP session with the caller's own progress token (nil when
// the caller asked for none).
func relayProgress(ctx context.Context, call *mcp.CallToolRequest) replicas.Notify {
	token := call.Params.GetProgressToken()
	if token == nil || call.Session == nil {
		return nil
	}
	return func(method string, raw json.RawMessage) {
		var p mcp.ProgressNotificationParams
		if method != "notifications/progress" || json.Unmarshal(raw, &p) != nil {
			return
		}
		p.ProgressToken, p.Meta = token, nil
		// Best effort, as for a local run: a caller that went away
		// cancels ctx, and with it the hop and the owner's run.
		_ = call.Session.NotifyProgress(ctx, &p)
	}
}

// forwardedToken stands for the principal the hop authenticated (tenant.From
// of the request): the SDK takes a principal only from a verified token.
const forwardedToken = "forwarded"

// ForwardedHandler serves requests forwarded by other replicas: one
// JSON-RPC request per HTTP POST, without an MCP session (stateless), its
// notifications and response as an SSE stream, as the principal the hop
// put in the request context (replicas.Set.Handler authenticates the hop;
// mount this only behind it). The request passes the same middleware as
// any other: tenancy, drain, slots, and the tool's own per-principal
// lookups; forward serves it here and cancels it when the hop ends.
func (s *Server) ForwardedHandler(maxBody int64) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless: true, Logger: slog.Default(), MaxRequestBodyBytes: maxBody,
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
