// Package execlog writes the execution history as JSONL, the source of truth
// of execution logging: one-shot runs go to
// executions-YYYY-MM-DD.jsonl (UTC day of executed_at), session activity to
// session-<id>.jsonl. Every execution has exactly one entry there, written
// when it ends; a run whose server was killed is logged as lost at the next
// start, from the in-flight journal's record of it (started.go).
//
// An entry is appended whole or not at all. Each is one line written with a
// single write(2) on an O_APPEND file under the Logger's mutex and an
// exclusive flock(2) (so servers sharing the directory do not interleave
// either). When the write fails — a full disk cuts it short, the file system
// turned read-only — the file is truncated back to its size before the
// write, so it is exactly as it was and the next entry cannot be glued to a
// fragment; the error says the entry was not recorded and why (WriteError).
//
// A file may still end in a torn line that no one truncated: the process
// was killed in the middle of a write, or the truncation itself failed.
// Such a fragment is kept, not cut off (it is the only trace of what was
// being written, and a hand-written line merely missing its final newline
// is a whole entry): the next append first ends it with a newline, so every
// entry starts on a line of its own. Readers skip lines that do not parse.
//
// A Logger is safe for concurrent use. Its zero value is not usable; use New.
package execlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/artifacts"
	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/sandbox"
)

// Entry is one execution (type "execution"), one-shot or in a session.
// Pointer fields encode as null when unknown, as the log format documents.
type Entry struct {
	Type         string         `json:"type"`
	ExecutionID  string         `json:"execution_id"`
	SessionID    *string        `json:"session_id"`
	Tool         string         `json:"tool,omitempty"`
	Language     string         `json:"language"`
	Code         string         `json:"code"`
	Args         []string       `json:"args,omitempty"`
	ScriptName   string         `json:"script_name,omitempty"`
	Stdin        *string        `json:"stdin"`
	Stdout       string         `json:"stdout"`
	Stderr       string         `json:"stderr"`
	ExitCode     *int           `json:"exit_code"`
	Status       string         `json:"status"`
	ErrorMessage string         `json:"error_message,omitempty"`
	TimedOut     bool           `json:"timed_out"`
	Truncated    bool           `json:"truncated"`
	DurationMs   int64          `json:"duration_ms"`
	MemoryPeakMB *float64       `json:"memory_peak_mb"`
	SandboxMode  string         `json:"sandbox_mode"`
	WorkingDir   string         `json:"working_dir"`
	Artifacts    artifacts.Diff `json:"artifacts"`
	Packages     []string       `json:"packages_installed,omitempty"`
	Context      CallContext    `json:"context"`
	// Intent and ToolCalls are set for code-mode executions (TypeScript with upstream tools).
	Intent     string     `json:"intent,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ExecutedAt time.Time  `json:"executed_at"`
	// At duplicates ExecutedAt for session files, where the format names it "at".
	At *time.Time `json:"at,omitempty"`
	// Owner is the principal the execution ran for (tenant.From); entries
	// written before tenants existed have none and belong to tenant.Local.
	Owner string `json:"owner,omitempty"`
	// Background marks a background run (the call returned before it ran;
	// get_run reads it), so a lost one is still found as a run.
	Background bool `json:"background,omitempty"`
	// Network is the audit of a run that had network through the egress
	// proxy: one entry per destination, allowed or denied (package egress).
	Network []egress.Entry `json:"network,omitempty"`
	// NetworkMode is "host" for a run that asked for network in a mode
	// without isolation: it had the host's network, unfiltered.
	NetworkMode string `json:"network_mode,omitempty"`
	// Limits is which resource limits held for the run and by what
	// (sandbox.Enforcement); absent in entries of runs that never started,
	// were lost, or were written before it was recorded.
	Limits *sandbox.Enforcement `json:"limits,omitempty"`
	// TraceID is the OpenTelemetry trace the run was recorded in (set only
	// while traces are exported), so a slow run found in the log leads to
	// its trace and back.
	TraceID string `json:"trace_id,omitempty"`
	// EndReason is why the run ended (runreport.Reasons);
	// absent in entries written before it was recorded.
	EndReason string `json:"end_reason,omitempty"`
	// Usage is what the run cost, where measured.
	Usage *Usage `json:"usage,omitempty"`
}

// Usage is what one run cost, as measured: a field is absent when it was
// not measured, never a zero standing in for "unknown". Results carry it
// too, so it is kept small.
type Usage struct {
	CPUUserMs   *int64 `json:"cpu_user_ms,omitempty" yaml:"cpu_user_ms,omitempty"`
	CPUSystemMs *int64 `json:"cpu_system_ms,omitempty" yaml:"cpu_system_ms,omitempty"`
	// MemoryPeakBytes: the cgroup's peak (every process of the run), else
	// the largest single process's peak resident set (rusage).
	MemoryPeakBytes int64 `json:"memory_peak_bytes,omitempty" yaml:"memory_peak_bytes,omitempty"`
	ProcessesPeak   int64 `json:"processes_peak,omitempty" yaml:"processes_peak,omitempty"`
	// WrittenBytes is the size of the files the run created or modified in
	// its working directory (the artifact diff).
	WrittenBytes *int64 `json:"written_bytes,omitempty" yaml:"written_bytes,omitempty"`
	NetworkBytes *int64 `json:"network_bytes,omitempty" yaml:"network_bytes,omitempty"`
	// Sandbox is how the sandbox was obtained: warm, forked or cold.
	Sandbox string `json:"sandbox,omitempty" yaml:"sandbox,omitempty"`
	// Source says how CPU and memory were measured: cgroup, rusage, or
	// cgroup+rusage (memory from the cgroup, CPU from rusage).
	Source string `json:"source,omitempty" yaml:"source,omitempty"`
}

// ToolCall is one upstream tool call made by code-mode code.
type ToolCall struct {
	Server      string  `json:"server"`
	Tool        string  `json:"tool"`
	ArgBytes    int     `json:"arg_bytes"`
	ResultBytes int     `json:"result_bytes"`
	DurationMs  float64 `json:"duration_ms"`
	Error       string  `json:"error,omitempty"`
}

// CallContext carries the caller's identifiers, taken from the tool call's
// _meta when the client sends them.
type CallContext struct {
	AgentID string `json:"agent_id,omitempty"`
	TraceID string `json:"trace_id,omitempty"`
	ChatID  string `json:"chat_id,omitempty"`
}

// Logger appends entries under one directory.
type Logger struct {
	dir string
	mu  sync.Mutex
	// files caches open append handles by name.
	files map[string]*logFile
	// onAppend, if set, observes every line written (for the search index).
	onAppend func(file string, offset int64, line []byte)
	// observers see every execution entry after it is written (metrics).
	observers []func(Entry)
	// lastErr is the outcome of the latest append (nil: it was written).
	lastErr error
}

// New returns a Logger writing into dir, creating it if needed. A directory
// that cannot be written now (full disk, read-only file system) is not an
// error here: the server keeps running, every append tries again and fails
// with a *WriteError until the cause is gone, and Probe reports it up
// front. Only an empty dir is refused.
func New(dir string) (*Logger, error) {
	if dir == "" {
		return nil, errors.New("execlog: no log directory given")
	}
	_ = os.MkdirAll(dir, 0o700) // open retries; Probe reports
	return &Logger{dir: dir, files: map[string]*logFile{}}, nil
}

// Dir is the log directory.
func (l *Logger) Dir() string { return l.dir }

// Err is the *WriteError of the latest append, or nil when that append was
// written: whether the log is being written right now, for status reports.
func (l *Logger) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}

// OnAppend registers a callback invoked (under the logger's lock, in write
// order) with each appended line, its file name and its byte offset.
func (l *Logger) OnAppend(fn func(file string, offset int64, line []byte)) {
	l.mu.Lock()
	l.onAppend = fn
	l.mu.Unlock()
}

// ObserveExecutions registers fn to be called with every entry that
// AppendExecution writes, after the write, outside the logger's lock. It is
// the one place every execution (one-shot, session, command) passes, so
// metrics hook here instead of in each caller. Register before use.
func (l *Logger) ObserveExecutions(fn func(Entry)) {
	l.mu.Lock()
	l.observers = append(l.observers, fn)
	l.mu.Unlock()
}

// DailyFile is the file name for one-shot executions on t's UTC day.
func DailyFile(t time.Time) string {
	return "executions-" + t.UTC().Format("2006-01-02") + ".jsonl"
}

// SessionFile is the file name of a session's log.
func SessionFile(sessionID string) string { return "session-" + sessionID + ".jsonl" }

// fileOf is the log file of an execution of sessionID at t (see
// AppendExecution).
func fileOf(sessionID *string, t time.Time) string {
	if sessionID != nil && *sessionID != "" {
		return SessionFile(*sessionID)
	}
	return DailyFile(t)
}

// AppendExecution writes e to the daily file, or to its session's file when
// e.SessionID is set.
func (l *Logger) AppendExecution(e Entry) error {
	e = AsWritten(e)
	name := fileOf(e.SessionID, e.ExecutedAt)
	if err := l.Append(name, e); err != nil {
		return err
	}
	l.mu.Lock()
	obs := l.observers
	l.mu.Unlock()
	for _, fn := range obs {
		fn(e)
	}
	return nil
}

// AsWritten is e as AppendExecution writes it: type "execution" and, in a
// session, "at" beside executed_at.
func AsWritten(e Entry) Entry {
	e.Type = "execution"
	if e.SessionID != nil && *e.SessionID != "" {
		at := e.ExecutedAt
		e.At = &at
	}
	return e
}

// Append writes v as one JSON line to the named file in the log directory:
// whole, or not at all with a *WriteError.
func (l *Logger) Append(name string, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("execlog: encode: %w", err)
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	off, err := l.write(name, line)
	l.lastErr = err
	if err != nil {
		return err
	}
	if l.onAppend != nil {
		l.onAppend(name, off, line)
	}
	return nil
}

func (l *Logger) closeAll() {
	for n, h := range l.files {
		_ = h.f.Close()
		delete(l.files, n)
	}
}

// Close closes every open file.
func (l *Logger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closeAll()
	return nil
}
