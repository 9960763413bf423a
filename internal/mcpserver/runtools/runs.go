package runtools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/mcpserver/execresult"
	"github.com/codexec/codexec/internal/mcpserver/runstart"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/runs"
)

// GetRunIn is get_run's input.
type GetRunIn struct {
	ExecutionID  string    `json:"execution_id"`
	StdoutOffset int64     `json:"stdout_offset,omitempty"`
	StderrOffset int64     `json:"stderr_offset,omitempty"`
	WaitMs       *tool.Int `json:"wait_ms,omitempty" jsonschema:"wait for output or the end, max 30000"`
}

// CancelRunIn is cancel_run's input.
type CancelRunIn struct {
	ExecutionID string `json:"execution_id"`
}

// CancelRunOut is cancel_run's result: the run's state once killed (get_run
// reads its output).
type CancelRunOut struct {
	ExecutionID  string          `json:"execution_id"`
	Status       string          `json:"status"`
	Result       json.RawMessage `json:"result,omitempty"`
	ErrorMessage string          `json:"error_message,omitempty"`
}

// ListRunsIn is list_runs' input.
type ListRunsIn struct {
	Status string `json:"status,omitempty" jsonschema:"running or a result status"`
	Limit  int    `json:"limit,omitempty" jsonschema:"default 20, max 100"`
}

// ListRunsOut is list_runs' result.
type ListRunsOut struct {
	Runs []runs.Summary `json:"runs"`
}

// maxWait bounds get_run's wait_ms, well under the 60 s many clients give
// a call.
const maxWait = 30 * time.Second

// cancelWait bounds how long cancel_run waits for the killed run to end.
const cancelWait = 10 * time.Second

// runStatuses are list_runs' status filters.
var runStatuses = []string{runs.StatusRunning, engine.StatusSuccess, engine.StatusExecutionError, engine.StatusTimeout,
	engine.StatusSetupError, engine.StatusCancelled, runs.StatusLost}

func (s *toolset) registerRuns() {
	if s.deps.Runs == nil {
		return
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: tool.Ptr(false)}
	tool.Add(s.r, &mcp.Tool{Name: "get_run", Title: "Get background run", OutputSchema: withResult(tool.OutputSchema[runs.View]()), Annotations: ro,
		Description: fmt.Sprintf("Read a background: true run (that call returned at once; timeout_ms default/max %d): "+
			"status, output from stdout_offset/stderr_offset (%d KiB each max; continue at next_*_offset), result once ended.",
			s.deps.Config.Background.MaxTimeout.Milliseconds(), runs.ChunkMax>>10)}, s.getRun)
	tool.Add(s.r, &mcp.Tool{Name: "cancel_run", Title: "Cancel background run", OutputSchema: withResult(tool.OutputSchema[CancelRunOut]()),
		Description: "Kill a background run; its result says cancelled.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(true), IdempotentHint: true, OpenWorldHint: tool.Ptr(false)}}, s.cancelRun)
	tool.Add(s.r, &mcp.Tool{Name: "list_runs", Title: "List background runs", Annotations: ro,
		Description: "List your background runs, newest first."}, s.listRuns)
}

// withResult makes s's result an object: the result of the tool that
// started the run, whatever its shape.
func withResult(s *jsonschema.Schema) *jsonschema.Schema {
	s.Properties["result"] = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	return s
}

func (s *toolset) getRun(ctx context.Context, _ *mcp.CallToolRequest, in GetRunIn) (*mcp.CallToolResult, runs.View, error) {
	if in.StdoutOffset < 0 || in.StderrOffset < 0 {
		return nil, runs.View{}, tool.Invalidf("stdout_offset and stderr_offset must be 0 or more (the next_*_offset of the last answer)")
	}
	wait := time.Duration(0)
	if in.WaitMs != nil {
		if ms := int64(*in.WaitMs); ms < 0 || ms > maxWait.Milliseconds() {
			return nil, runs.View{}, tool.Invalidf("wait_ms must be between 0 and %d, got %d", maxWait.Milliseconds(), ms)
		}
		wait = time.Duration(*in.WaitMs) * time.Millisecond
	}
	v, err := s.deps.Runs.Get(ctx, in.ExecutionID, runs.Read{StdoutOffset: in.StdoutOffset, StderrOffset: in.StderrOffset, Wait: wait})
	if err != nil {
		return nil, runs.View{}, runError(err)
	}
	return nil, v, nil
}

func (s *toolset) cancelRun(ctx context.Context, _ *mcp.CallToolRequest, in CancelRunIn) (*mcp.CallToolResult, CancelRunOut, error) {
	v, err := s.deps.Runs.Cancel(ctx, in.ExecutionID, cancelWait)
	if err != nil {
		return nil, CancelRunOut{}, runError(err)
	}
	return nil, CancelRunOut{ExecutionID: v.ExecutionID, Status: v.Status, Result: v.Result, ErrorMessage: v.ErrorMessage}, nil
}

func (s *toolset) listRuns(ctx context.Context, _ *mcp.CallToolRequest, in ListRunsIn) (*mcp.CallToolResult, ListRunsOut, error) {
	if in.Status != "" && !slices.Contains(runStatuses, in.Status) {
		return nil, ListRunsOut{}, tool.Invalidf("status must be one of %v, got %q", runStatuses, in.Status)
	}
	limit := in.Limit
	switch {
	case limit == 0:
		limit = 20
	case limit < 0 || limit > 100:
		return nil, ListRunsOut{}, tool.Invalidf("limit must be between 1 and 100, got %d", limit)
	}
	list, err := ListRuns(ctx, s.deps, in.Status, limit)
	if err != nil {
		return nil, ListRunsOut{}, err
	}
	return nil, ListRunsOut{Runs: list}, nil
}

// ListRuns is list_runs' listing of ctx's principal's runs, newest first,
// at most limit, of status if set: this server's (d.Runs) and, among
// replicas (d.Peers), every replica's.
func ListRuns(ctx context.Context, d Deps, status string, limit int) ([]runs.Summary, error) {
	list := d.Runs.List(ctx, status, limit)
	if d.Peers == nil {
		return list, nil
	}
	return (&toolset{deps: d}).remoteRuns(ctx, list, status, limit)
}

// runError codes an error of the runs service.
func runError(err error) error {
	switch {
	case errors.Is(err, runs.ErrNotFound):
		return tool.Coded(tool.CodeExecutionNotFound, "%v", err)
	case errors.Is(err, runs.ErrLimit):
		return tool.Coded(tool.CodeLimitExceeded, "%v", err)
	case errors.Is(err, runs.ErrClosed):
		return tool.Coded(tool.CodeServerNotReady, "%v", err)
	case errors.Is(err, logindex.ErrUnavailable):
		return tool.Coded(tool.CodeLogUnavailable, "%v", err)
	}
	return tool.Classify(err)
}

// backgroundTimeout resolves a background run's timeout: its own cap,
// which is also its default.
func (s *toolset) backgroundTimeout(ms, sec *tool.Int) (time.Duration, error) {
	limit := s.deps.Config.Background.MaxTimeout
	return s.deps.Engine.ResolveTimeoutUpTo(tool.IntPtr(ms), tool.IntPtr(sec), limit, limit, "CODEXEC_BACKGROUND_MAX_TIMEOUT_MS")
}

// background starts j as a background run of the call req (runstart.Start).
func (s *toolset) background(ctx context.Context, req *mcp.CallToolRequest, j runs.Job) (runs.View, *runs.Outcome, error) {
	return runstart.Start(ctx, req, s.deps.Runs, j)
}

// startedText is the text of a call that started a background run.
func startedText(id string) *mcp.CallToolResult { return runstart.Text(id) }

// stoppedNote puts why a cancelled run was stopped in its error message.
func stoppedNote(ctx context.Context, status string, msg **string) {
	runstart.StoppedNote(ctx, status, msg)
}

// execOutcome is a run of execute_code's shape as a background outcome.
func execOutcome(ctx context.Context, res engine.Result, err error) (runs.Outcome, error) {
	if err != nil {
		return runs.Outcome{}, err
	}
	stoppedNote(ctx, res.Status, &res.ErrorMessage)
	return runs.Outcome{Status: res.Status, Result: res}, nil
}

// execAnswer is the answer of a call of execute_code's shape that asked
// for a background run: the running placeholder, or the result of a run
// that ended before it started.
func execAnswer(v runs.View, out *runs.Outcome, err error, lang string) (*mcp.CallToolResult, engine.Result, error) {
	if err != nil {
		return execresult.Fail(err)
	}
	if out != nil {
		res, _ := out.Result.(engine.Result)
		return execresult.Text(res), res, nil
	}
	res := engine.Result{ExecutionID: v.ExecutionID, Status: runs.StatusRunning, Language: lang, Artifacts: []string{}}
	return startedText(v.ExecutionID), res, nil
}
