// Package tasks serves MCP Tasks in front of the SDK, which does not
// implement them: a tools/call answered with a task handle the client polls
// (tasks/get), reads (tasks/result), cancels (tasks/cancel) and lists
// (tasks/list), in both forms MCP has had: the 2025-11-25 revision's core
// Tasks (a `tasks` capability, `params.task` on tools/call, the tools'
// `execution.taskSupport`) and the 2026-07-28 extension
// `io.modelcontextprotocol/tasks` (declared per request, answers carrying
// `resultType`, the result inline in tasks/get).
//
// A task IS a background run (package runs): its task id is the run's
// execution id, so get_run, list_runs and cancel_run see it, it outlives
// the client and the connection, and it belongs to the principal that
// started it like any run. This package only translates: the wire shapes
// (this file), the requests it answers itself (Service), and the few
// rewrites of what passes between a client and the SDK (Conn for stdio,
// Handler for HTTP): the capability in initialize's result, taskSupport in
// tools/list, and `params.task` carried to the SDK's middleware under a
// private _meta key (MarkerKey) that the server turns into a run.
package tasks

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Names the protocol defines.
const (
	// ExtensionID names the 2026-07-28 Tasks extension in capabilities.
	ExtensionID = "io.modelcontextprotocol/tasks"
	// RelatedTaskKey is the _meta key tying a message to its task.
	RelatedTaskKey = "io.modelcontextprotocol/related-task"
	// protocolVersionKey and clientCapabilitiesKey are the per-request
	// _meta keys of the 2026-07-28 revision.
	protocolVersionKey    = "io.modelcontextprotocol/protocolVersion"
	clientCapabilitiesKey = "io.modelcontextprotocol/clientCapabilities"
	// legacyVersion is the revision whose core has Tasks.
	legacyVersion = "2025-11-25"
	// codeMissingCapability is the 2026-07-28 error for a request that
	// needs a client capability it did not declare.
	codeMissingCapability = -32021
)

// MarkerKey is the _meta key under which the wire hands a 2025-11-25
// tools/call's `params.task` to the server's middleware (the SDK drops
// unknown params): its value is the task's parameters as the client sent
// them. A client setting it itself only asks for a task, as `params.task`
// does.
const MarkerKey = "dev.codexec/task"

// Statuses of a task.
const (
	StatusWorking   = "working"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Task is a task as both forms describe it; Legacy and Extension render it.
type Task struct {
	ID            string
	Status        string
	StatusMessage string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	TTL           time.Duration // how long the result is kept; 0: unlimited
	PollInterval  time.Duration
	// Result is the final CallToolResult (completed, cancelled) and Error
	// the JSON-RPC error (failed), once the task ended.
	Result json.RawMessage
	Error  *jsonrpc.Error
}

// legacyTask is the 2025-11-25 Task object.
type legacyTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

// Legacy is t as the 2025-11-25 Task object.
func (t Task) Legacy() any {
	return legacyTask{TaskID: t.ID, Status: t.Status, StatusMessage: t.StatusMessage,
		CreatedAt: stamp(t.CreatedAt), LastUpdatedAt: stamp(t.UpdatedAt), TTL: millis(t.TTL),
		PollInterval: t.PollInterval.Milliseconds()}
}

// extensionTask is the extension's DetailedTask with a result's resultType.
type extensionTask struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *jsonrpc.Error  `json:"error,omitempty"`
}

// Extension is t as the extension's result of resultType rt: "task" for
// the handle a tools/call returns (no result inline), "complete" for
// tasks/get (the result or error inline once the task ended).
func (t Task) Extension(rt string) any {
	e := extensionTask{ResultType: rt, TaskID: t.ID, Status: t.Status, StatusMessage: t.StatusMessage,
		CreatedAt: stamp(t.CreatedAt), LastUpdatedAt: stamp(t.UpdatedAt), TTLMs: millis(t.TTL),
		PollIntervalMs: t.PollInterval.Milliseconds()}
	if rt != "task" {
		e.Result, e.Error = t.Result, t.Error
	}
	return e
}

// CreateResult is the 2025-11-25 CreateTaskResult: the task under "task".
type CreateResult struct {
	Task any `json:"task"`
}

// LegacyCapability is the 2025-11-25 server capability: tasks/list,
// tasks/cancel, and tools/call as a task.
var LegacyCapability = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

// Execution is a task-capable tool's `execution` in tools/list: a client
// may call it as a task or not.
var Execution = json.RawMessage(`{"taskSupport":"optional"}`)

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func millis(d time.Duration) *int64 {
	if d <= 0 {
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}

// Extended reports whether meta (a request's _meta) is of the 2026-07-28
// revision (it carries its protocol version) and, if so, whether its
// client declared the Tasks extension for this request.
func Extended(meta map[string]any) (newProtocol, declared bool) {
	v, ok := meta[protocolVersionKey].(string)
	if !ok || v <= legacyVersion {
		return false, false
	}
	caps, _ := meta[clientCapabilitiesKey].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	_, declared = ext[ExtensionID]
	return true, declared
}

// extendedRaw is Extended over a request's raw params.
func extendedRaw(params json.RawMessage) (newProtocol, declared bool) {
	var m struct {
		Meta map[string]any `json:"_meta"`
	}
	if len(params) == 0 || json.Unmarshal(params, &m) != nil {
		return false, false
	}
	return Extended(m.Meta)
}

// IsMethod reports whether method is one this package answers.
func IsMethod(method string) bool { return strings.HasPrefix(method, "tasks/") }

// MissingCapability is the error a request of the 2026-07-28 revision gets
// when it needs the Tasks extension and did not declare it.
func MissingCapability() *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeMissingCapability,
		Message: "this request needs the Tasks extension: declare io.modelcontextprotocol/tasks in the request's client capabilities (extensions)",
		Data:    json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + ExtensionID + `":{}}}}`)}
}
