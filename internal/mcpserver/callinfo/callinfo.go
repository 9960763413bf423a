// Package callinfo reads what a tool call carries besides its arguments,
// for the toolsets: the caller's identifiers in _meta (for the execution
// log) and the progress token its output is streamed to.
package callinfo

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/progress"
)

// CallContext extracts the caller's identifiers (agent, trace and chat id,
// snake_case or camelCase) from the call's _meta, for the execution log.
func CallContext(req *mcp.CallToolRequest) execlog.CallContext {
	var cc execlog.CallContext
	if req == nil || req.Params == nil {
		return cc
	}
	m := req.Params.GetMeta()
	get := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := m[k].(string); ok {
				return v
			}
		}
		return ""
	}
	cc.AgentID = get("agent_id", "agentId")
	cc.TraceID = get("trace_id", "traceId")
	cc.ChatID = get("chat_id", "chatId")
	return cc
}

// StreamOutput returns an observer that streams a running call's output
// as notifications/progress when the call carries a progressToken (nil
// otherwise), and a finish function that sends what is left; finish must
// run before the handler returns its result, so every notification
// precedes the response.
func StreamOutput(ctx context.Context, req *mcp.CallToolRequest) (output.Observer, func()) {
	if req == nil || req.Params == nil || req.Session == nil {
		return nil, func() {}
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil, func() {}
	}
	st := progress.New(progress.Defaults, func(seq int, msg string) {
		// Best effort: a client that went away cancels ctx and the run.
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Message: msg, Progress: float64(seq)})
	})
	return st.Observe, st.Close
}

// detachedSend bounds one progress notification of a background run.
const detachedSend = 5 * time.Second

// StreamDetached is StreamOutput for a background run, whose call returns
// before the run does: the messages carry the call's progressToken and go
// to its client for as long as the run lasts and the client stays
// connected; the first send that fails (the client went away) ends them.
// They are sent with a context of their own, not the call's: over
// Streamable HTTP they then take the client's standalone stream, since the
// call's stream closed with its response. The returned function sends what
// is left and closes the stream; call it when the run ends.
func StreamDetached(req *mcp.CallToolRequest) (output.Observer, func()) {
	if req == nil || req.Params == nil || req.Session == nil {
		return nil, func() {}
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil, func() {}
	}
	var gone atomic.Bool
	st := progress.New(progress.Defaults, func(seq int, msg string) {
		if gone.Load() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), detachedSend)
		defer cancel()
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Message: msg, Progress: float64(seq)}); err != nil {
			gone.Store(true)
		}
	})
	return st.Observe, st.Close
}
