package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/mcpserver/packagetools"
	"github.com/codexec/codexec/internal/mcpserver/runtools"
	"github.com/codexec/codexec/internal/mcpserver/tasks"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/tenant"
)

// taskForm is how a tools/call asks to be a task, if it does.
type taskForm int

const (
	notTask   taskForm = iota
	legacy             // 2025-11-25: params.task (carried as _meta[tasks.MarkerKey])
	extension          // 2026-07-28: the client declared the extension and asked for background: true
)

// newTasks builds the task wire when background runs are on (a task is a
// background run); nil otherwise, and clients are told of no tasks. A
// task's result is kept as long as a run's (CODEXEC_ARTIFACT_TTL after it
// ended; at least that long after it was created).
func (s *Server) newTasks() *tasks.Wire {
	if s.deps.Runs == nil || !slices.Contains(s.deps.Config.Toolsets, "runs") {
		return nil
	}
	svc := tasks.New(taskRuns{s}, renderTask, tasks.Options{TTL: s.deps.Runs.Keep()})
	return tasks.NewWire(svc, taskTools)
}

// taskTools are the tools that run as tasks: every tool with a background
// form (background: true).
var taskTools = append(slices.Clone(runtools.BackgroundTools), "send_to_session", "install_package")

// renderTask is the CallToolResult a foreground call of tool returns, for
// the result of one of its background runs (tasks.Service's renderer).
func renderTask(tool string, result json.RawMessage) (json.RawMessage, error) {
	if tool != "install_package" {
		return runtools.Render(tool, result) // send_to_session's result is execute_code's
	}
	res, err := packagetools.Render(result)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// formOf is how call asks to be a task. A 2026-07-28 client that declared
// the extension gets a task for a call that asks to run in the background:
// the server decides, and the task handle is what such a client polls.
func formOf(call *mcp.CallToolRequest) taskForm {
	meta := call.Params.Meta
	if _, ok := meta[tasks.MarkerKey]; ok {
		return legacy
	}
	if _, declared := tasks.Extended(meta); !declared {
		return notTask
	}
	var a struct {
		Background bool `json:"background"`
	}
	if json.Unmarshal(call.Params.Arguments, &a) != nil || !a.Background {
		return notTask
	}
	return extension
}

// taskCalls runs a tools/call that asks to be a task as a background run
// of its tool and answers with the task handle, once the run is recorded
// (so a tasks/get for it resolves). Other requests pass on.
func (s *Server) taskCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || call.Params == nil || s.tasks == nil {
			return next(ctx, method, req)
		}
		form := formOf(call)
		if form == notTask {
			return next(ctx, method, req)
		}
		delete(call.Params.Meta, tasks.MarkerKey)
		if !slices.Contains(taskTools, call.Params.Name) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
				"%s cannot run as a task (its execution.taskSupport is forbidden): call it without params.task; tasks run %v",
				call.Params.Name, taskTools)}
		}
		args, err := inBackground(call.Params.Arguments)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		call.Params.Arguments = args
		res, err := next(ctx, method, req)
		if err != nil {
			return nil, err
		}
		return s.taskHandle(ctx, form, res)
	}
}

// inBackground is a call's arguments with background: true.
func inBackground(raw json.RawMessage) (json.RawMessage, error) {
	args, err := tasks.SetField(raw, "background", json.RawMessage("true"))
	if err != nil {
		return nil, fmt.Errorf("the arguments of a tool called as a task must be an object: %v", err)
	}
	return args, nil
}

// taskHandle answers a call that started a background run with its task;
// a call refused, or whose run ended before it started, has no task: its
// answer is the call's own (an error for the 2025-11-25 form, whose client
// waits for a task handle).
func (s *Server) taskHandle(ctx context.Context, form taskForm, res mcp.Result) (mcp.Result, error) {
	ctr, _ := res.(*mcp.CallToolResult)
	id, running := startedRun(ctr)
	if !running {
		if form == extension {
			return res, nil
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no task was created: " + resultText(ctr)}
	}
	t, err := s.tasks.Service().Task(ctx, id)
	if err != nil {
		return nil, err
	}
	var body any = tasks.CreateResult{Task: t.Legacy()}
	if form == extension {
		body = t.Extension("task")
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return &rawResult{body: b}, nil
}

// startedRun is the execution id of the background run a call's result
// says it started.
func startedRun(res *mcp.CallToolResult) (string, bool) {
	if res == nil || res.IsError {
		return "", false
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		ExecutionID string `json:"execution_id"`
		Status      string `json:"status"`
	}
	if json.Unmarshal(b, &out) != nil || out.Status != runs.StatusRunning || out.ExecutionID == "" {
		return "", false
	}
	return out.ExecutionID, true
}

// resultText is the text of a call's result, which says why it failed.
func resultText(res *mcp.CallToolResult) string {
	if res == nil {
		return "the call returned no result"
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text
		}
	}
	return "the call returned no text"
}

// rawResult is a result the SDK sends as it is: a task handle, which the
// SDK has no type for.
type rawResult struct {
	mcp.ResultBase
	body json.RawMessage
}

// MarshalJSON is the handle as encoded.
func (r *rawResult) MarshalJSON() ([]byte, error) { return r.body, nil }

// httpPrincipal names an HTTP request's principal as tenancy does a tool
// call's: the verified token's user, tenant.Local without auth.
func httpPrincipal(r *http.Request) (context.Context, error) {
	p := tenant.Local
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		if p = ti.UserID; p == "" {
			return nil, errNoPrincipal
		}
	}
	return tenant.With(r.Context(), p), nil
}
