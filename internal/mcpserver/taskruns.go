package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/mcpserver/runtools"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

// taskRuns are the background runs as tasks read them (tasks.Runs): this
// replica's, and, among replicas, a run that another live replica holds,
// read over the internal hop as get_run and cancel_run read it. A run whose
// replica stopped is answered here by the runs service (its stored result,
// or status lost), as get_run answers it.
type taskRuns struct{ s *Server }

// Get is runs.Manager.Get, on the replica holding id.
func (r taskRuns) Get(ctx context.Context, id string, rd runs.Read) (runs.View, error) {
	if owner, ok := r.remote(ctx, id); ok {
		args := map[string]any{"execution_id": id, "stdout_offset": min(rd.StdoutOffset, maxJSONInt),
			"stderr_offset": min(rd.StderrOffset, maxJSONInt), "wait_ms": rd.Wait.Milliseconds()}
		return r.view(ctx, owner, "get_run", args)
	}
	return r.s.deps.Runs.Get(ctx, id, rd)
}

// Cancel is runs.Manager.Cancel, on the replica holding id.
func (r taskRuns) Cancel(ctx context.Context, id string, wait time.Duration) (runs.View, error) {
	if owner, ok := r.remote(ctx, id); ok {
		if _, err := r.view(ctx, owner, "cancel_run", map[string]any{"execution_id": id}); err != nil {
			return runs.View{}, err
		}
		return r.view(ctx, owner, "get_run", map[string]any{"execution_id": id})
	}
	return r.s.deps.Runs.Cancel(ctx, id, wait)
}

// List is list_runs' listing: this replica's runs and every other's.
func (r taskRuns) List(ctx context.Context, status string, limit int) ([]runs.Summary, error) {
	return runtools.ListRuns(ctx, runtools.Deps{Runs: r.s.deps.Runs, Peers: r.s.peers()}, status, limit)
}

// maxJSONInt is the largest offset sent over the hop: past any output
// (tasks read from there to wait for the end only), and exact in the
// float64 a JSON number may be decoded into.
const maxJSONInt = 1 << 53

// remote is the live replica other than this one that holds ctx's
// principal's run id, if there is one.
func (r taskRuns) remote(ctx context.Context, id string) (sessionreg.Replica, bool) {
	if r.s.deps.Replicas == nil || r.s.holds(ctx, id) {
		return sessionreg.Replica{}, false
	}
	owner, remote, err := r.s.deps.Replicas.Route(ctx, tenant.From(ctx), id)
	return owner, err == nil && remote
}

// view calls the runs tool name on owner and reads the run from its
// result; EXECUTION_NOT_FOUND is runs.ErrNotFound.
func (r taskRuns) view(ctx context.Context, owner sessionreg.Replica, name string, args map[string]any) (runs.View, error) {
	params, err := json.Marshal(map[string]any{"name": name, "arguments": args})
	if err != nil {
		return runs.View{}, err
	}
	raw, err := r.s.deps.Replicas.Forward(ctx, owner, tenant.From(ctx), "tools/call", params, nil)
	if err != nil {
		return runs.View{}, fmt.Errorf("replica %s: %w", owner.ID, err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return runs.View{}, fmt.Errorf("replica %s answered an unreadable result: %w", owner.ID, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if res.IsError {
		var e struct{ Code, Error string }
		if json.Unmarshal(b, &e) == nil && e.Code == string(tool.CodeExecutionNotFound) {
			return runs.View{}, runs.ErrNotFound
		}
		return runs.View{}, errors.New(string(b))
	}
	var v runs.View
	if err := json.Unmarshal(b, &v); err != nil {
		return runs.View{}, fmt.Errorf("replica %s answered an unreadable run: %w", owner.ID, err)
	}
	return v, nil
}
