// Package logtools is the MCP face of the execution log: the logs toolset
// (search_execution_logs, get_execution_log) over logindex, reporting when
// new executions cannot be recorded (execlog's write error).
package logtools

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/artifacts"
	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
)

// SearchLogsIn is search_execution_logs' input.
type SearchLogsIn struct {
	Language   string `json:"language,omitempty"`
	Status     string `json:"status,omitempty" jsonschema:"lost: the server was killed while it ran"`
	Query      string `json:"query,omitempty" jsonschema:"all words, in code or output"`
	Since      string `json:"since,omitempty" jsonschema:"YYYY-MM-DD or RFC 3339"`
	Limit      int    `json:"limit,omitempty" jsonschema:"default 20, max 200"`
	Host       string `json:"host,omitempty" jsonschema:"runs that reached this host"`
	DeniedHost string `json:"denied_host,omitempty" jsonschema:"runs denied this host"`
}

// SearchLogsOut is search_execution_logs' result.
type SearchLogsOut struct {
	Results    []logindex.Hit `json:"results"`
	TotalCount int            `json:"total_count"` // matches, may exceed len(results); counting stops at 10000
	// TotalCountCapped is set when more than logindex.CountCap executions
	// match: counting a million matches would make every broad search slow.
	TotalCountCapped bool `json:"total_count_capped,omitempty"`
	// LogError is set while new executions cannot be recorded (the latest
	// append to the execution log failed): they are missing from results.
	LogError string `json:"log_error,omitempty"`
}

// GetLogIn is get_execution_log's input.
type GetLogIn struct {
	ExecutionID string `json:"execution_id"`
}

// GetLogOut is the full log entry of one execution: the execution log's
// record plus status fields.
type GetLogOut struct {
	ExecutionID       string             `json:"execution_id"`
	SessionID         *string            `json:"session_id"`
	Tool              string             `json:"tool,omitempty"` // tool that ran it (execute_code, run_script, …)
	ScriptName        string             `json:"script_name,omitempty"`
	Language          string             `json:"language"`
	Code              string             `json:"code"`
	Args              []string           `json:"args,omitempty"`
	Stdin             *string            `json:"stdin"`
	Stdout            string             `json:"stdout"`
	Stderr            string             `json:"stderr"`
	ExitCode          *int               `json:"exit_code"`
	Status            string             `json:"status"`
	EndReason         string             `json:"end_reason,omitempty"`
	ErrorMessage      string             `json:"error_message,omitempty"`
	TimedOut          bool               `json:"timed_out"`
	Truncated         bool               `json:"truncated"`
	DurationMs        int64              `json:"duration_ms"`
	MemoryPeakMB      *float64           `json:"memory_peak_mb"`
	PackagesInstalled []string           `json:"packages_installed"`
	ArtifactsCreated  []string           `json:"artifacts_created"`
	ArtifactsModified []string           `json:"artifacts_modified"`
	ArtifactsDeleted  []string           `json:"artifacts_deleted"`
	SandboxMode       string             `json:"sandbox_mode"`
	WorkingDir        string             `json:"working_dir,omitempty"`
	AgentID           string             `json:"agent_id,omitempty"`
	TraceID           string             `json:"trace_id,omitempty"`
	ChatID            string             `json:"chat_id,omitempty"`
	Intent            string             `json:"intent,omitempty"`
	ToolCalls         []execlog.ToolCall `json:"tool_calls,omitempty"` // code mode's upstream calls
	Network           []egress.Entry     `json:"network,omitempty"`    // the run's network audit
	NetworkMode       string             `json:"network_mode,omitempty"`
	// Limits is which resource limits held for the run and how (absent
	// for runs logged without it).
	Limits *sandbox.Enforcement `json:"limits,omitempty"`
	// Usage is what the run cost, where measured (the log entry's record).
	Usage      *execlog.Usage `json:"usage,omitempty"`
	ExecutedAt time.Time      `json:"executed_at"`
}

// History is what the logs toolset reads: the execution history, embedded
// (*logindex.Index) or shared (a database). Errors wrap logindex's
// ErrInvalidQuery, ErrNotFound and ErrUnavailable as those documents say.
type History interface {
	Search(ctx context.Context, q logindex.Query) ([]logindex.Hit, int, error)
	Get(ctx context.Context, id string) (execlog.Entry, error)
}

// Deps are the services the logs toolset reads.
type Deps struct {
	Logs    History         // nil: no logs toolset
	ExecLog *execlog.Logger // the execution log, whose write failure search_execution_logs reports; nil: none
}

type toolset struct {
	deps Deps
}

// Register adds search_execution_logs and get_execution_log when the log
// index is wired.
func Register(r *tool.Registrar, d Deps) {
	if d.Logs == nil {
		return
	}
	s := &toolset{deps: d}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: tool.Ptr(false)}
	in := tool.InputSchema[SearchLogsIn]()
	// "" is no filter, as an absent status.
	in.Properties["status"].Enum = append([]any{""}, toAny(logindex.Statuses)...)
	tool.Add(r, &mcp.Tool{Name: "search_execution_logs", Title: "Search execution logs", Description: "Search past executions, newest first.",
		Annotations: ro, InputSchema: in}, s.searchLogs)
	tool.Add(r, &mcp.Tool{Name: "get_execution_log", Title: "Get execution log", Description: "Get one execution's full log entry.",
		Annotations: ro}, s.getLog)
}

func (s *toolset) searchLogs(ctx context.Context, _ *mcp.CallToolRequest, in SearchLogsIn) (*mcp.CallToolResult, SearchLogsOut, error) {
	q := logindex.Query{Status: in.Status, Text: in.Query, Limit: in.Limit, Host: in.Host, DeniedHost: in.DeniedHost}
	if in.Language != "" {
		l, err := runtime.Normalize(in.Language)
		if err != nil {
			return nil, SearchLogsOut{}, tool.Coded(tool.CodeInvalidLanguage, "%v", err)
		}
		q.Language = l
	}
	if in.Since != "" {
		t, err := parseSince(in.Since)
		if err != nil {
			return nil, SearchLogsOut{}, tool.Invalidf("since must be a date (2006-01-02) or an RFC 3339 time (2006-01-02T15:04:05Z), got %q", in.Since)
		}
		q.Since = t
	}
	if in.Limit < 0 {
		return nil, SearchLogsOut{}, tool.Coded(tool.CodeInvalidParams, "limit must be positive, got %d", in.Limit)
	}
	hits, total, err := s.deps.Logs.Search(ctx, q)
	if errors.Is(err, logindex.ErrInvalidQuery) {
		return nil, SearchLogsOut{}, tool.Coded(tool.CodeInvalidParams, "%v", err)
	}
	if err != nil {
		return nil, SearchLogsOut{}, s.logUnavailable(err)
	}
	out := SearchLogsOut{Results: hits, TotalCount: total, LogError: s.logWriteError()}
	if total > logindex.CountCap {
		out.TotalCount, out.TotalCountCapped = logindex.CountCap, true
	}
	return nil, out, nil
}

// logUnavailable is the tool error of a log search that cannot be
// answered: the index's reason, plus the log writer's when it fails too.
func (s *toolset) logUnavailable(err error) error {
	msg := err.Error()
	if w := s.logWriteError(); w != "" {
		msg += "; new executions are not being recorded either: " + w
	}
	return tool.Coded(tool.CodeLogUnavailable, "%s", msg)
}

// logWriteError is why the latest execution could not be logged, or "".
func (s *toolset) logWriteError() string {
	if l := s.deps.ExecLog; l != nil {
		if err := l.Err(); err != nil {
			return err.Error()
		}
	}
	return ""
}

func parseSince(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, v)
}

func (s *toolset) getLog(ctx context.Context, _ *mcp.CallToolRequest, in GetLogIn) (*mcp.CallToolResult, GetLogOut, error) {
	e, err := s.deps.Logs.Get(ctx, in.ExecutionID)
	if errors.Is(err, logindex.ErrNotFound) {
		return nil, GetLogOut{}, tool.Coded(tool.CodeExecutionNotFound, "%v", err)
	}
	if errors.Is(err, logindex.ErrUnavailable) {
		return nil, GetLogOut{}, s.logUnavailable(err)
	}
	if err != nil {
		return nil, GetLogOut{}, tool.Coded(tool.CodeLogUnavailable, "%v", err)
	}
	a := nonNilDiff(e.Artifacts)
	return nil, GetLogOut{ExecutionID: e.ExecutionID, SessionID: e.SessionID, Tool: e.Tool, ScriptName: e.ScriptName,
		Language: e.Language, Code: e.Code, Args: e.Args, Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr,
		ExitCode: e.ExitCode, Status: e.Status, ErrorMessage: e.ErrorMessage, TimedOut: e.TimedOut, Truncated: e.Truncated,
		DurationMs: e.DurationMs, MemoryPeakMB: e.MemoryPeakMB, PackagesInstalled: orEmpty(e.Packages),
		ArtifactsCreated: a.Created, ArtifactsModified: a.Modified, ArtifactsDeleted: a.Deleted,
		SandboxMode: e.SandboxMode, WorkingDir: e.WorkingDir, AgentID: e.Context.AgentID, TraceID: e.Context.TraceID,
		ChatID: e.Context.ChatID, Intent: e.Intent, ToolCalls: e.ToolCalls, ExecutedAt: e.ExecutedAt,
		Network: e.Network, NetworkMode: e.NetworkMode, Limits: e.Limits, EndReason: e.EndReason, Usage: e.Usage}, nil
}

func nonNilDiff(d artifacts.Diff) artifacts.Diff {
	return artifacts.Diff{Created: orEmpty(d.Created), Modified: orEmpty(d.Modified), Deleted: orEmpty(d.Deleted)}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
