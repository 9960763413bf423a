package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/codexec/codexec/internal/artifacts"
	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runreport"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/tenant"
	"github.com/codexec/codexec/internal/tracing"
)

// Statuses of a run (the status field of execute_code's result).
const (
	StatusSuccess        = "success"
	StatusExecutionError = "execution_error"
	StatusTimeout        = "timeout"
	StatusSetupError     = "setup_error"
	// StatusCancelled: the client cancelled the call (or went away) and the
	// run was killed (one-shot) or interrupted (session).
	StatusCancelled = "cancelled"
)

// Request is one one-shot execution. Language must be a canonical name (see
// runtime.Normalize); Timeout zero means the default.
type Request struct {
	Language   string
	Code       string
	Stdin      *string
	Timeout    time.Duration
	WorkingDir string
	Args       []string
	// Tool and ScriptName annotate the log entry ("execute_code", "run_script").
	Tool       string
	ScriptName string
	Context    execlog.CallContext
	// NoLog marks internal runs (health checks, package probes): no log
	// entry, no Options.AfterRun, no Prepare step.
	NoLog bool
	// Background runs the program at a low CPU weight where the backend
	// can (start-up checks), so it does not slow the first real runs.
	Background bool
	// Cold never serves the run from a warm runner: health probes check the
	// whole start path and leave the runners to real runs.
	Cold bool
	// Observe, if set, sees the program's stdout/stderr as it runs.
	Observe output.Observer
	// Prepare, if set, runs after the workspace exists, before the program
	// starts and before the artifact snapshot (so what it writes is not an
	// artifact), with the workspace opened with the sandbox user's rights;
	// an error makes the run a setup_error. Staged uploads are placed this
	// way. Not run for NoLog runs.
	Prepare func(ws *files.Root) error
	// Program, if set, is the source built and run instead of Code; Code
	// is still what the log records (code mode runs Code inside a wrapper).
	Program string
	// Intent is the caller's statement of the task, for the log.
	Intent string
	// MemoryBytes, if positive, replaces the engine's memory limit.
	MemoryBytes int64
	// Channel, if set, carries the run's side channel on its stdin and
	// stdout (code mode's tool calls and result).
	Channel Channel
	// Network is the run's network policy, already resolved within the
	// caller's ceiling (egress.Service.Resolve); zero: no network.
	Network egress.Policy
	// dirWritable: the program may write its workspace (set from the
	// workspace's placement; see Engine.Workspace).
	dirWritable bool
	dirOwner    *sandbox.Owner
}

// Channel is a side channel between the server and one run's program over
// its stdio (code mode: tool calls and the result envelope, see package
// codemode). A run with a channel never uses a warm runner, whose pipes
// would not carry it.
type Channel interface {
	// Stdin is the program's stdin.
	Stdin() io.Reader
	// Stdout returns the writer that gets the program's stdout; what is
	// ordinary output it passes on to sink.
	Stdout(sink io.Writer) io.Writer
	// Finish is called once the program is gone and its output drained,
	// before the result is logged, with the run's timeout (the default
	// when the request had none): it closes the channel and returns res
	// completed from what came over it, and the calls made through it for
	// the log entry.
	Finish(res Result, timeout time.Duration) (Result, []execlog.ToolCall)
}

// Result is the outcome of one execution. It is also the structured output
// of the execute_code tool.
type Result struct {
	Success       bool    `json:"success" jsonschema:"true when the program ran and exited with status 0"`
	ExecutionID   string  `json:"execution_id" jsonschema:"id of this execution in the execution log (exec_…)"`
	SessionID     *string `json:"session_id,omitempty" jsonschema:"session the code ran in, if any"`
	Language      string  `json:"language" jsonschema:"canonical language: python, node, typescript or bash"`
	Stdout        string  `json:"stdout" jsonschema:"standard output (head+tail truncated when too long)"`
	Stderr        string  `json:"stderr" jsonschema:"standard error (head+tail truncated when too long)"`
	ExitCode      *int    `json:"exit_code" jsonschema:"exit status; null when the program was killed (timeout, signal, memory limit) or never started"`
	DurationMs    int64   `json:"duration_ms" jsonschema:"wall time in milliseconds"`
	ExecutionTime float64 `json:"execution_time" jsonschema:"wall time in seconds, to the millisecond"`
	Status        string  `json:"status" jsonschema:"success | execution_error | timeout | setup_error | cancelled"`
	EndReason     string  `json:"end_reason,omitempty" jsonschema:"exit|signal|oom|timeout|cancelled|disk_full|lost|not_started"`
	ErrorMessage  *string `json:"error_message" jsonschema:"why the status is not success; null on success"`
	TimedOut      bool    `json:"timed_out" jsonschema:"true when the timeout stopped the program"`
	Truncated     bool    `json:"truncated" jsonschema:"true when stdout or stderr was truncated"`
	OOMKilled     bool    `json:"oom_killed,omitempty" jsonschema:"true when the memory limit killed the program"`
	// Usage is what the run cost, as measured (absent fields: not measured).
	Usage *Usage `json:"usage,omitempty" jsonschema:"what the run cost, where measured (docs/cost.md)"`
	// Limits is which resource limits held for the run and by what
	// (sandbox.Enforcement); absent when nothing ran or the sandbox does
	// not say.
	Limits    *sandbox.Enforcement `json:"limits,omitempty" jsonschema:"the resource limits that held for this run and how: cgroup, rlimit per process, container, a tmpfs or disk image size, or none"`
	Artifacts []string             `json:"artifacts" jsonschema:"files created or modified in the working directory"`
	// TraceID is the OpenTelemetry trace the call was recorded in, set
	// only while traces are exported (package tracing).
	TraceID string `json:"trace_id,omitempty" jsonschema:"OpenTelemetry trace id of this call, when the server exports traces"`
	// SandboxMode is the server's sandbox mode, the same for every run: the
	// execution log records it, results do not repeat it.
	SandboxMode string `json:"-"`
	// WorkingDirNote says how the code could use a caller's working_dir.
	WorkingDirNote string `json:"working_dir_note,omitempty" jsonschema:"how the code could use the given working_dir (read-only, or unconfined in subprocess mode)"`
	LogError       string `json:"log_error,omitempty" jsonschema:"set when this execution could not be recorded in the execution log, and why; the result itself is complete"`
	// Network is the audit of a run that had network through the proxy
	// (absent when it tried no connection, or had no network).
	Network []egress.Entry `json:"network,omitempty" jsonschema:"each destination, allowed or denied (reason), connections, bytes"`
	// NetworkMode is NetworkHost when the run had the host's network.
	NetworkMode string `json:"network_mode,omitempty" jsonschema:"host: subprocess mode, the run had the host's network, unfiltered"`
	// Resumed is set on the first result of a paused session that resumed
	// for this call (sessionckpt.Resumed): its checkpoint's age and, by name,
	// what came back and what was lost. Untyped so the schema stays small.
	Resumed any `json:"resumed,omitempty" jsonschema:"the paused session resumed first: checkpoint age and what was restored or lost, by name"`
	// Code-mode fields, set only for code-mode executions (package
	// codemode).
	Value any `json:"result,omitempty" jsonschema:"code mode: the JSON value the code returned"`
	// Logs is a pointer so that a code-mode result carries logs even when
	// empty ([]), as code mode documents, while other results omit it.
	Logs      *[]string        `json:"logs,omitempty" jsonschema:"code mode: console output of the code, one entry per call"`
	Metrics   *CodeModeMetrics `json:"metrics,omitempty" jsonschema:"code mode: execution metrics"`
	CodeError *CodeModeError   `json:"error,omitempty" jsonschema:"code mode: SyntaxError, RuntimeError or TimeoutError details"`
	// Diff is the full artifact diff (created/modified/deleted) for the log.
	Diff         artifacts.Diff `json:"-"`
	MemoryPeakMB *float64       `json:"-"`
	WorkingDir   string         `json:"-"`
	// CompileError is set when TypeScript did not compile (status
	// execution_error); nothing ran.
	CompileError *runtime.CompileError `json:"-"`
	// End is what EndReason was derived from (Ended).
	End runreport.Facts `json:"-"`
}

// FailureShape is how a call that was to return a Result fails without
// running anything: a Result with status setup_error, the message as its
// error_message, plus the failure's code, so readers of status and readers
// of an error's code both see that nothing ran.
func (Result) FailureShape(message, code string) any {
	return struct {
		Result
		Code string `json:"code"`
	}{Ended(Result{Status: StatusSetupError, ErrorMessage: &message, Artifacts: []string{}}, runreport.Facts{NotStarted: true}), code}
}

// LogLines is a code-mode result's logs ([] when none), nil for any other
// result.
func (r Result) LogLines() []string {
	if r.Logs == nil {
		if r.Metrics != nil {
			return []string{}
		}
		return nil
	}
	return *r.Logs
}

// Seconds is d in seconds rounded to the millisecond, as results report
// execution_time: finer digits are noise that every result pays for. A run
// that took any time at all reports at least a millisecond, never 0.
func Seconds(d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return max(math.Round(d.Seconds()*1000)/1000, 0.001)
}

// CodeModeMetrics are a code-mode execution's metrics.
type CodeModeMetrics struct {
	ExecutionTimeMs float64 `json:"executionTimeMs" jsonschema:"wall time of the execution in milliseconds"`
	InputSizeBytes  int     `json:"inputSizeBytes" jsonschema:"size of the code in bytes"`
	OutputSizeBytes int     `json:"outputSizeBytes" jsonschema:"size of the JSON-serialized result in bytes"`
}

// CodeModeError is a code-mode execution's error: type is SyntaxError,
// RuntimeError or TimeoutError.
type CodeModeError struct {
	Type    string `json:"type" jsonschema:"SyntaxError | RuntimeError | TimeoutError"`
	Name    string `json:"name,omitempty" jsonschema:"JavaScript error class for runtime errors (TypeError, …)"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty" jsonschema:"1-based line in the submitted code (syntax errors)"`
	Column  int    `json:"column,omitempty" jsonschema:"1-based column in the submitted code (syntax errors)"`
	Stack   string `json:"stack,omitempty"`
}

// Execute runs one request. Invalid requests (unknown language, forbidden
// working_dir) return an error and run nothing; a program that fails, times
// out or cannot be set up is a Result with the matching status. Cancelling
// ctx kills the whole run at once (status cancelled); the log entry is
// written for ctx's principal either way.
func (e *Engine) Execute(ctx context.Context, req Request) (Result, error) {
	lang, err := runtime.Normalize(req.Language)
	if err != nil {
		return Result{}, err
	}
	if req.Timeout == 0 {
		req.Timeout = e.opts.DefaultTimeout
	}
	wctx, span := tracing.Start(ctx, tracer, "workspace.acquire")
	ws, err := e.runWorkspace(wctx, req.WorkingDir, req.NoLog)
	tracing.End(span, err)
	if err != nil {
		return Result{}, err
	}
	// The workspace goes after the result: its disk reset and removal
	// (~1–2 ms) are not the caller's wait. Close waits for them.
	defer e.later(ws.Close)
	id := execlog.NewID("exec_")
	started := time.Now()
	req.dirWritable, req.dirOwner = ws.Dir.Writable, dirOwner(ws.Dir)
	e.logStarted(ctx, id, lang, ws.Dir.Path, req, started)
	res := e.runCode(ctx, id, lang, ws, req)
	res.WorkingDir, res.WorkingDirNote = ws.Dir.Path, ws.Note()
	var calls []execlog.ToolCall
	if req.Channel != nil {
		res, calls = req.Channel.Finish(res, req.Timeout)
	}
	res.TraceID = tracing.TraceID(ctx)
	if !req.NoLog {
		res.LogError = e.logExecution(ctx, res, req, calls, started)
	}
	return res, nil
}

// runWorkspace is a one-shot run's workspace: a fresh one (named for a
// health probe when probe) is handed to the sandbox user.
func (e *Engine) runWorkspace(ctx context.Context, workingDir string, probe bool) (*Workspace, error) {
	prefix := "exec_"
	if probe {
		prefix = "health_"
	}
	ws, err := e.Workspace(ctx, execlog.NewID(prefix), workingDir)
	if err != nil || !ws.Owned {
		return ws, err
	}
	if err := e.handOver(ws.Dir.Path); err != nil {
		ws.Close()
		return nil, err
	}
	return ws, nil
}

// runCode builds and runs the program. A run that arrives while
// its language's start-up check is still going does not wait for it: it
// runs at once (so the first result comes as fast as any), and only if it
// fails is the check awaited, to report a broken language as unavailable.
func (e *Engine) runCode(ctx context.Context, id, lang string, ws *Workspace, req Request) Result {
	res := Result{ExecutionID: id, Language: lang, SandboxMode: e.backend.Name(), Artifacts: []string{}}
	pending := false
	if !req.NoLog { // health probes (NoLog) must not wait for themselves
		var err error
		if pending, err = e.languageErrorNow(lang); err != nil {
			return setupError(res, fmt.Sprintf("%s is unavailable on this server: %v", lang, err))
		}
	}
	out := e.buildAndRun(ctx, res, id, lang, ws, req)
	if pending && out.Status != StatusSuccess {
		if err := e.LanguageError(lang); err != nil {
			return setupError(res, fmt.Sprintf("%s is unavailable on this server: %v", lang, err))
		}
	}
	return out
}

func (e *Engine) buildAndRun(ctx context.Context, res Result, id, lang string, ws *Workspace, req Request) Result {
	source := req.Code
	if req.Program != "" {
		source = req.Program
	}
	_, span := tracing.Start(ctx, tracer, "program.build")
	prog, err := e.langs.Build(lang, source, req.Args)
	tracing.End(span, err)
	var ce *runtime.CompileError
	if errors.As(err, &ce) {
		res = compileFailure(res, ce)
		res.CompileError = ce
		return res
	}
	if err != nil {
		return setupError(res, err.Error())
	}
	progDir, err := writeProgram(e.opts.SandboxDir, id, prog.Files, e.createdDir)
	defer func() {
		if progDir != "" {
			_ = e.removeDir(progDir)
		}
	}()
	if err != nil {
		return setupError(res, err.Error())
	}
	root, err := ws.Open()
	if err != nil {
		return setupError(res, err.Error())
	}
	defer root.Close()
	placed := req.Prepare != nil && !req.NoLog
	if placed {
		if err := req.Prepare(root); err != nil {
			return setupError(res, "placing uploaded files: "+err.Error())
		}
	}
	changes := ws.trackChanges(root, placed)
	spec := e.codeSpec(id, lang, prog.Argv, progDir, ws, req)
	net := e.attachNetwork(ctx, id, req.Network)
	spec.Egress, spec.Env = net.egressOf(), append(spec.Env, net.environ()...)
	oc := e.runProcess(ctx, spec)
	net.finish(&res)
	_, span = tracing.Start(ctx, tracer, "artifacts")
	res = changes.Apply(res)
	span.End()
	res = ws.NoteDiskFull(fillOutcome(res, oc, req.Timeout, e.opts.Limits.MemoryBytes))
	if res.EndReason != runreport.NotStarted {
		res.Usage = runreport.WithWritten(res.Usage, res.Diff.Bytes)
	}
	if e.opts.AfterRun != nil && !req.NoLog {
		e.opts.AfterRun(ctx, root, &res)
	}
	return res
}

// codeSpec is the process that runs a code request's built program.
func (e *Engine) codeSpec(id, lang string, argv []string, progDir string, ws *Workspace, req Request) processSpec {
	dir := ws.Dir.Path
	spec := processSpec{ID: id, Argv: argv, Dir: dir, DirWritable: req.dirWritable, DirOwner: req.dirOwner, Env: runEnv(e.opts, lang, dir),
		Stdin: stdinReader(req.Stdin), Timeout: req.Timeout, ProgramDir: progDir, Warm: warmKind(lang),
		OnStdout: req.Observe.For("stdout"), OnStderr: req.Observe.For("stderr"), TmpDir: ws.tmpDir(), DiskBytes: ws.diskBytes(),
		Background: req.Background}
	if req.Cold {
		spec.Warm = ""
	}
	if req.MemoryBytes > 0 {
		l := e.opts.Limits
		l.MemoryBytes = req.MemoryBytes
		spec.Limits = &l
	}
	if req.Channel != nil {
		// Stays on the cold path: a warm runner's pipes do not carry the
		// channel.
		spec.Warm = ""
		spec.Stdin, spec.WrapStdout = req.Channel.Stdin(), req.Channel.Stdout
	}
	return spec
}

// warmKind is the warm runner kind that can run lang's programs.
func warmKind(lang string) string {
	switch lang {
	case runtime.Python:
		return sandbox.WarmPython
	case runtime.Node, runtime.TypeScript:
		return sandbox.WarmNode
	case runtime.Bash:
		return sandbox.WarmBash
	}
	return ""
}

// writeProgram writes program files to a private directory outside the
// workspace, so they never show up as artifacts; created sees the directory
// once made. The directory is returned even when a write fails.
func writeProgram(sandboxDir, id string, files map[string][]byte, created func(dir string)) (string, error) {
	if len(files) == 0 {
		return "", nil
	}
	dir := filepath.Join(sandboxDir, ".programs", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	created(dir)
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return dir, err
		}
	}
	return dir, nil
}

// stdinReader returns nil (not a typed nil) when there is no stdin.
func stdinReader(s *string) io.Reader {
	if s == nil {
		return nil
	}
	return strings.NewReader(*s)
}

func setupError(res Result, msg string) Result {
	res.Status = StatusSetupError
	res.ErrorMessage = &msg
	return Ended(res, runreport.Facts{NotStarted: true})
}

func compileFailure(res Result, ce *runtime.CompileError) Result {
	msg := ce.Error()
	res.Status = StatusExecutionError
	res.ErrorMessage = &msg
	res.Stderr = fmt.Sprintf("main.ts:%d:%d: error: %s\n    %s\n", ce.Line, ce.Column, ce.Text, ce.LineText)
	return Ended(res, runreport.Facts{NotStarted: true})
}

// fillOutcome maps a process outcome onto the result's status fields, its
// end reason and its usage.
func fillOutcome(res Result, oc outcome, timeout time.Duration, memLimit int64) Result {
	res = Ended(res, runreport.Facts{NotStarted: oc.StartErr != nil, Cancelled: oc.Cancelled, TimedOut: oc.TimedOut,
		OOMKilled: oc.Exit.OOMKilled, Signal: oc.Exit.Signal})
	if oc.StartErr == nil {
		res.Usage = runreport.WithNetwork(runreport.FromExit(oc.Exit), res.Network)
	}
	res.Stdout, res.Stderr, res.Truncated = oc.Stdout, oc.Stderr, oc.Truncated
	res.DurationMs = oc.Duration.Milliseconds()
	res.ExecutionTime = Seconds(oc.Duration)
	res.Limits = oc.Limits
	if oc.Exit.MemoryPeakBytes > 0 {
		mb := float64(oc.Exit.MemoryPeakBytes) / (1 << 20)
		res.MemoryPeakMB = &mb
	}
	msg := ""
	switch {
	case oc.Cancelled:
		res.Status, msg = StatusCancelled, "Execution cancelled by the client; the run was killed."
	case oc.StartErr != nil:
		res.Status, msg = StatusSetupError, "sandbox could not start the program: "+oc.StartErr.Error()
	case oc.TimedOut:
		res.Status, res.TimedOut = StatusTimeout, true
		msg = fmt.Sprintf("Execution timed out after %s.", FormatSeconds(timeout))
	case oc.Exit.OOMKilled:
		res.Status, res.OOMKilled = StatusExecutionError, true
		msg = fmt.Sprintf("memory limit %d MiB exceeded: the program was killed", memLimit>>20)
	case oc.Exit.Signal != 0:
		res.Status, msg = StatusExecutionError, "killed by signal "+signalName(oc.Exit.Signal)
	case oc.Exit.Code != 0:
		code := oc.Exit.Code
		res.ExitCode, res.Status, msg = &code, StatusExecutionError, fmt.Sprintf("Process exited with code %d.", code)
	default:
		code := 0
		res.ExitCode, res.Status, res.Success = &code, StatusSuccess, true
		return res
	}
	res.ErrorMessage = &msg
	return res
}

// FormatSeconds renders a timeout for messages: "1 second", "30 seconds",
// "0.5 seconds".
func FormatSeconds(d time.Duration) string {
	if d%time.Second == 0 {
		n := int(d / time.Second)
		if n == 1 {
			return "1 second"
		}
		return fmt.Sprintf("%d seconds", n)
	}
	return fmt.Sprintf("%g seconds", d.Seconds())
}

func signalName(sig int) string {
	return fmt.Sprintf("%d (%s)", sig, syscall.Signal(sig).String())
}

// logExecution appends res to the execution log, with the tool calls made
// through the run's channel, and returns "" or, when the entry could not be
// written, the error for the result's log_error.
func (e *Engine) logExecution(ctx context.Context, res Result, req Request, calls []execlog.ToolCall, started time.Time) string {
	if e.log == nil {
		return ""
	}
	entry := execlog.Entry{
		ExecutionID: res.ExecutionID, SessionID: res.SessionID, Tool: req.Tool, Language: res.Language,
		Code: req.Code, Args: req.Args, ScriptName: req.ScriptName, Stdin: req.Stdin, Stdout: res.Stdout,
		Stderr: res.Stderr, ExitCode: res.ExitCode, Status: res.Status, ErrorMessage: deref(res.ErrorMessage),
		TimedOut: res.TimedOut, Truncated: res.Truncated, DurationMs: res.DurationMs, MemoryPeakMB: res.MemoryPeakMB,
		SandboxMode: res.SandboxMode, WorkingDir: res.WorkingDir, Artifacts: res.Diff, Context: req.Context,
		ExecutedAt: started.UTC(), Owner: tenant.From(ctx), Intent: req.Intent, ToolCalls: calls,
		Background: startHook(ctx) != nil, NetworkMode: res.NetworkMode, Limits: res.Limits,
		EndReason: res.EndReason, Usage: res.Usage,
	}
	entry.Network, entry.TraceID = res.Network, res.TraceID
	_, span := tracing.Start(ctx, tracer, "execlog.write")
	err := e.log.AppendExecution(entry)
	tracing.End(span, err)
	if err != nil {
		slog.Error("execution log write failed; result still returned", "execution_id", res.ExecutionID, "err", err)
		return err.Error()
	}
	e.opts.Journal.RunEnded(res.ExecutionID, "")
	return ""
}
