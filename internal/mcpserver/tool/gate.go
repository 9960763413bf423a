package tool

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Gate runs in every tool's handler after the arguments decoded and
// before the tool's own handler: a non-nil result is the call's answer
// instead (a multi round-trip question for the client: input requests and
// a request state, no content), an error refuses the call in the tool's
// error shape, and (nil, nil) lets the handler run. It runs inside the
// SDK's own multi round-trip middleware, which only the handler's result
// reaches; that is why it is here and not a receiving middleware.
type Gate func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error)

// SetGate installs g in front of every tool's handler (nil removes it).
// Set it before the server serves.
func (r *Registrar) SetGate(g Gate) { r.gate = g }

// passGate runs the gate, if any: done reports that the call ends with
// res (a question or a refusal) without running the handler.
func (r *Registrar) passGate(ctx context.Context, req *mcp.CallToolRequest, es errShape) (res *mcp.CallToolResult, done bool) {
	if r.gate == nil {
		return nil, false
	}
	q, err := r.gate(ctx, req)
	switch {
	case err != nil:
		return es.result(Classify(err)), true
	case q != nil:
		return q, true
	}
	return nil, false
}
