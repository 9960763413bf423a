package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/runs"
)

// Runs is what tasks use of the background runs: runs.Manager's Get and
// Cancel, and list_runs' listing (List). Every method works for ctx's
// principal only (tenant.From).
type Runs interface {
	Get(ctx context.Context, id string, rd runs.Read) (runs.View, error)
	Cancel(ctx context.Context, id string, wait time.Duration) (runs.View, error)
	List(ctx context.Context, status string, limit int) ([]runs.Summary, error)
}

// Render is the CallToolResult a foreground call of tool would have
// returned, for a run's result (its structured content).
type Render func(tool string, result json.RawMessage) (json.RawMessage, error)

// Options tune what tasks tell clients.
type Options struct {
	// TTL is how long a task's result is kept after it was created (the
	// runs' keep time); 0: not stated.
	TTL time.Duration
	// PollInterval is the polling interval suggested to clients.
	PollInterval time.Duration
}

// Service answers the tasks/* requests from the background runs.
type Service struct {
	runs   Runs
	render Render
	opts   Options
}

// New returns a Service over r, rendering results with render.
func New(r Runs, render Render, o Options) *Service {
	if o.PollInterval <= 0 {
		o.PollInterval = 500 * time.Millisecond
	}
	return &Service{runs: r, render: render, opts: o}
}

// resultWait bounds one wait of tasks/result for the run's end; it waits
// again until the run ends or the request is cancelled.
const resultWait = 30 * time.Second

// cancelWait bounds how long tasks/cancel waits for a killed run to end.
const cancelWait = 10 * time.Second

// unreachable is the status list_runs gives a run of a replica that did
// not answer the listing in time.
const unreachable = "unreachable"

// listLimit is the most tasks tasks/list returns (the newest).
const listLimit = 100

// taskParams are the params of tasks/get, tasks/result, tasks/cancel and
// tasks/update.
type taskParams struct {
	TaskID string `json:"taskId"`
}

// Answer answers the tasks/* request req for ctx's principal
// (tenant.With): always a response, a JSON-RPC error where the protocol
// says so. tasks/result may block until the task ends or ctx is done.
func (s *Service) Answer(ctx context.Context, req *jsonrpc.Request) *jsonrpc.Response {
	res, err := s.answer(ctx, req)
	if err != nil {
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		return &jsonrpc.Response{ID: req.ID, Error: we}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}}
	}
	return &jsonrpc.Response{ID: req.ID, Result: b}
}

func (s *Service) answer(ctx context.Context, req *jsonrpc.Request) (any, error) {
	ext, declared := extendedRaw(req.Params)
	if ext && !declared {
		return nil, MissingCapability()
	}
	if req.Method == "tasks/list" {
		if ext {
			return nil, notFound(req.Method, "the Tasks extension has no tasks/list")
		}
		return s.list(ctx)
	}
	var p taskParams
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, invalid("%s: params are not an object with a taskId string: %v", req.Method, err)
		}
	}
	if p.TaskID == "" {
		return nil, invalid("%s needs params.taskId: the taskId of the task tools/call returned", req.Method)
	}
	return s.dispatch(ctx, req.Method, p.TaskID, ext)
}

func (s *Service) dispatch(ctx context.Context, method, id string, ext bool) (any, error) {
	switch {
	case method == "tasks/get":
		t, err := s.get(ctx, id, 0)
		if err != nil || !ext {
			return legacyOrNil(t, err)
		}
		return t.Extension("complete"), nil
	case method == "tasks/cancel":
		t, err := s.cancel(ctx, id)
		if err != nil || !ext {
			return legacyOrNil(t, err)
		}
		return map[string]string{"resultType": "complete"}, nil
	case method == "tasks/result" && !ext:
		return s.result(ctx, id)
	case method == "tasks/update" && ext:
		// codexec's tasks never ask for input: nothing is outstanding, and
		// responses to keys not outstanding are ignored, as the extension says.
		if _, err := s.get(ctx, id, 0); err != nil {
			return nil, err
		}
		return map[string]string{"resultType": "complete"}, nil
	}
	return nil, notFound(method, "not a Tasks method of this protocol revision")
}

func legacyOrNil(t Task, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return t.Legacy(), nil
}

// Task is the task id of ctx's principal as it stands.
func (s *Service) Task(ctx context.Context, id string) (Task, error) { return s.get(ctx, id, 0) }

// get is the task id as it stands, after waiting up to wait for its end.
// It reads from past any output, so that only the end (not output) ends
// the wait, and no output is copied.
func (s *Service) get(ctx context.Context, id string, wait time.Duration) (Task, error) {
	v, err := s.runs.Get(ctx, id, runs.Read{StdoutOffset: math.MaxInt64, StderrOffset: math.MaxInt64, Wait: wait})
	if err != nil {
		return Task{}, taskError(id, err)
	}
	return s.taskOf(v), nil
}

// taskOf is the task of run v, its final result rendered once it ended.
func (s *Service) taskOf(v runs.View) Task {
	t := Task{ID: v.ExecutionID, Status: StatusOf(v.Status), CreatedAt: v.StartedAt, UpdatedAt: v.StartedAt,
		TTL: s.opts.TTL, PollInterval: s.opts.PollInterval, StatusMessage: v.ErrorMessage}
	if v.EndedAt != nil {
		t.UpdatedAt = *v.EndedAt
	}
	switch t.Status {
	case StatusFailed:
		msg := "the task was lost: " + v.ErrorMessage
		t.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
	case StatusCompleted, StatusCancelled:
		if len(v.Result) > 0 {
			if r, err := s.render(v.Tool, v.Result); err == nil {
				t.Result = r
			} else {
				t.Status, t.Error = StatusFailed, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "render the result: " + err.Error()}
			}
		}
	}
	return t
}

// StatusOf is the task status of a run status: a run that ended with a
// result, whatever it says of the program, completed the call.
func StatusOf(run string) string {
	switch run {
	case runs.StatusRunning:
		return StatusWorking
	case engine.StatusCancelled:
		return StatusCancelled
	case runs.StatusLost:
		return StatusFailed
	}
	return StatusCompleted
}

// result waits for the task's end and answers as the call would have.
func (s *Service) result(ctx context.Context, id string) (any, error) {
	for {
		t, err := s.get(ctx, id, resultWait)
		if err != nil {
			return nil, err
		}
		if t.Status != StatusWorking {
			return s.final(t)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// final is a task's tasks/result: the call's result, tied to the task, or
// the error it failed with.
func (s *Service) final(t Task) (any, error) {
	if t.Error != nil {
		return nil, t.Error
	}
	var res map[string]any
	if err := json.Unmarshal(t.Result, &res); err != nil || res == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %s ended without a result", t.ID)}
	}
	meta, _ := res["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[RelatedTaskKey] = map[string]string{"taskId": t.ID}
	res["_meta"] = meta
	return res, nil
}

// cancel kills the task's run; a task that already ended cannot be.
func (s *Service) cancel(ctx context.Context, id string) (Task, error) {
	t, err := s.get(ctx, id, 0)
	if err != nil {
		return Task{}, err
	}
	if t.Status != StatusWorking {
		return Task{}, invalid("task %s cannot be cancelled: it is already %s", id, t.Status)
	}
	v, err := s.runs.Cancel(ctx, id, cancelWait)
	if err != nil {
		return Task{}, taskError(id, err)
	}
	return s.taskOf(v), nil
}

// list is the principal's tasks, newest first.
func (s *Service) list(ctx context.Context) (any, error) {
	sums, err := s.runs.List(ctx, "", listLimit)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	out := make([]any, 0, len(sums))
	for _, r := range sums {
		t := Task{ID: r.ExecutionID, Status: StatusOf(r.Status), CreatedAt: r.StartedAt, UpdatedAt: r.StartedAt,
			TTL: s.opts.TTL, PollInterval: s.opts.PollInterval, StatusMessage: r.Note}
		if r.Status == unreachable {
			t.Status = StatusWorking // its replica did not answer in time: it was running when last seen
		}
		if r.EndedAt != nil {
			t.UpdatedAt = *r.EndedAt
		}
		out = append(out, t.Legacy())
	}
	return map[string]any{"tasks": out}, nil
}

// taskError is err of the runs service as the protocol's error: an id
// nobody (or somebody else) used is invalid params.
func taskError(id string, err error) error {
	if errors.Is(err, runs.ErrNotFound) {
		return invalid("task %s not found: no task or background run of yours has this id (or its result has expired)", id)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %s: %v", id, err)}
}

func invalid(format string, a ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, a...)}
}

func notFound(method, why string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%s: %s", method, why)}
}
