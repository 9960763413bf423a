package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/artifacts"
	"github.com/codexec/codexec/internal/codemode"
	"github.com/codexec/codexec/internal/diskbound"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/pathguard"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/tenant"
)

// Statuses of seed 003.
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
	// entry, no Options.AfterRun, no WithPrepare step.
	NoLog bool
	// Background runs the program at a low CPU weight where the backend
	// can (start-up checks), so it does not slow the first real runs.
	Background bool
	// Cold never serves the run from a warm runner: health probes check the
	// whole start path and leave the runners to real runs.
	Cold bool
	// Observe, if set, sees the program's stdout/stderr as it runs.
	Observe output.Observer
	// io overrides stdin/stdout plumbing and limits (code mode's channel).
	io *runIO
	// dirWritable: the program may write its workspace (set from the
	// workspace's placement; see Engine.workspace).
	dirWritable bool
}

// runIO is what code mode changes about a run: its stdin is the channel's
// pipe, its stdout goes through the channel, and its limits may differ.
type runIO struct {
	stdin      io.Reader
	wrapStdout func(io.Writer) io.Writer
	limits     *sandbox.Limits
	intent     string
	toolCalls  func() []execlog.ToolCall
}

type prepareKey struct{}

// WithPrepare returns ctx carrying a preparation step for the workspace of
// the one-shot run made with it: fn runs after the workspace exists, before
// the program starts and before the artifact snapshot (so what it writes is
// not an artifact); an error makes the run a setup_error. Staged uploads are
// placed this way. It travels in ctx so that callers in between (run_script's
// runner, code mode) need not carry it.
func WithPrepare(ctx context.Context, fn func(ws *files.Root) error) context.Context {
	return context.WithValue(ctx, prepareKey{}, fn)
}

func prepareFrom(ctx context.Context) func(ws *files.Root) error {
	fn, _ := ctx.Value(prepareKey{}).(func(ws *files.Root) error)
	return fn
}

// Result is the outcome of one execution, with the fields of seeds 000 and
// 003. It is also the structured output of the execute_code tool.
type Result struct {
	Success       bool     `json:"success" jsonschema:"true when the program ran and exited with status 0"`
	ExecutionID   string   `json:"execution_id" jsonschema:"id of this execution in the execution log (exec_…)"`
	SessionID     *string  `json:"session_id,omitempty" jsonschema:"session the code ran in, if any"`
	Language      string   `json:"language" jsonschema:"canonical language: python, node, typescript or bash"`
	Stdout        string   `json:"stdout" jsonschema:"standard output (head+tail truncated when too long)"`
	Stderr        string   `json:"stderr" jsonschema:"standard error (head+tail truncated when too long)"`
	ExitCode      *int     `json:"exit_code" jsonschema:"exit status; null when the program was killed (timeout, signal, memory limit) or never started"`
	DurationMs    int64    `json:"duration_ms" jsonschema:"wall time in milliseconds"`
	ExecutionTime float64  `json:"execution_time" jsonschema:"wall time in seconds"`
	Status        string   `json:"status" jsonschema:"success | execution_error | timeout | setup_error | cancelled"`
	ErrorMessage  *string  `json:"error_message" jsonschema:"why the status is not success; null on success"`
	TimedOut      bool     `json:"timed_out" jsonschema:"true when the timeout stopped the program"`
	Truncated     bool     `json:"truncated" jsonschema:"true when stdout or stderr was truncated"`
	OOMKilled     bool     `json:"oom_killed,omitempty" jsonschema:"true when the memory limit killed the program"`
	Artifacts     []string `json:"artifacts" jsonschema:"files created or modified in the working directory"`
	SandboxMode   string   `json:"sandbox_mode" jsonschema:"isolation mode the code ran under"`
	// WorkingDirNote says how the code could use a caller's working_dir.
	WorkingDirNote string `json:"working_dir_note,omitempty" jsonschema:"how the code could use the given working_dir (read-only, or unconfined in subprocess mode)"`
	LogError       string `json:"log_error,omitempty" jsonschema:"set when this execution could not be recorded in the execution log, and why; the result itself is complete"`
	// Code mode (seed 004) fields, set only for code-mode executions.
	Value     any               `json:"result,omitempty" jsonschema:"code mode: the JSON value the code returned"`
	Logs      []string          `json:"logs,omitempty" jsonschema:"code mode: console output of the code, one entry per call"`
	Metrics   *codemode.Metrics `json:"metrics,omitempty" jsonschema:"code mode: execution metrics"`
	CodeError *codemode.Error   `json:"error,omitempty" jsonschema:"code mode: SyntaxError, RuntimeError or TimeoutError details"`
	// Diff is the full artifact diff (created/modified/deleted) for the log.
	Diff         artifacts.Diff `json:"-"`
	MemoryPeakMB *float64       `json:"-"`
	WorkingDir   string         `json:"-"`
	compileErr   *runtime.CompileError
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
	dir, disk, cleanup, err := e.workspace(req.WorkingDir, req.NoLog)
	if err != nil {
		return Result{}, err
	}
	// The workspace goes after the result: its disk reset and removal
	// (~1–2 ms) are not the caller's wait. Close waits for them.
	defer e.later(cleanup)
	id := execlog.NewID("exec_")
	started := time.Now()
	req.dirWritable = dir.Writable
	e.LogStarted(ctx, id, lang, dir.Path, req, started)
	res := e.runCode(ctx, id, lang, dir.Path, disk, req, nil)
	res.WorkingDir, res.WorkingDirNote = dir.Path, e.WorkingDirNote(req.WorkingDir, dir)
	if !req.NoLog {
		res.LogError = e.logExecution(ctx, res, req, started)
	}
	return res, nil
}

// workspace returns the run's directory: the validated working_dir, or a
// fresh directory under SandboxDir removed by cleanup; and its bounded disk
// (nil when disks are not bounded), released by cleanup.
func (e *Engine) workspace(workingDir string, probe bool) (pathguard.Dir, *diskbound.Disk, func(), error) {
	if workingDir != "" {
		dir, err := e.ResolveDir(workingDir)
		if err != nil {
			return pathguard.Dir{}, nil, nil, fmt.Errorf("working_dir rejected: %w", err)
		}
		disk, err := e.BoundDisk(dir.Path, false)
		if err != nil {
			return pathguard.Dir{}, nil, nil, err
		}
		return dir, disk, func() { releaseDisk(disk) }, nil
	}
	prefix := "exec_"
	if probe {
		prefix = "health_"
	}
	dir, err := e.NewWorkspace(execlog.NewID(prefix))
	if err != nil {
		return pathguard.Dir{}, nil, nil, err
	}
	disk, err := e.BoundDisk(dir, true)
	if err == nil {
		err = e.handOver(dir)
	}
	if err != nil {
		releaseDisk(disk)
		_ = e.RemoveDir(dir)
		return pathguard.Dir{}, nil, nil, err
	}
	return pathguard.Dir{Path: dir, Writable: true}, disk, func() { releaseDisk(disk); _ = e.RemoveDir(dir) }, nil
}

// handOver gives a fresh workspace of codexec's own to the sandbox user, so
// that uploads placed in it with that user's rights (WithPrepare) succeed.
func (e *Engine) handOver(dir string) error {
	u := e.backend.User()
	if u.IsServer() {
		return nil
	}
	uid, gid := u.IDs()
	if err := os.Lchown(dir, uid, gid); err != nil {
		return fmt.Errorf("create workspace: %w", err)
	}
	return nil
}

// OpenWorkspace opens a run's or session's workspace for the server to act
// on with the sandbox user's rights (files.OpenWorkspace); writable says
// whether its code may write there. The caller closes it.
func (e *Engine) OpenWorkspace(dir string, writable bool) (*files.Root, error) {
	return files.OpenWorkspace(dir, e.backend.User(), writable)
}

// ResolveDir checks a caller's directory (working_dir, cwd) against the
// server's policy (see pathguard) and says whether code may write it.
func (e *Engine) ResolveDir(dir string) (pathguard.Dir, error) {
	return e.guard.Resolve(dir, e.opts.BaseDir)
}

// WorkingDirNote is what a result says about a caller's directory: empty
// for codexec's own workspaces (given is empty) and for writable
// directories the sandbox user may really write, in isolated modes.
func (e *Engine) WorkingDirNote(given string, dir pathguard.Dir) string {
	switch {
	case given == "":
		return ""
	case !e.backend.Isolated():
		return "subprocess mode: the code ran unconfined with the server's rights; " + dir.Path + " was not protected"
	case !dir.Writable:
		return dir.Path + " is read-only to the code; an operator can make it writable with CODEXEC_WRITABLE_ROOTS"
	case !e.userCanWrite(dir.Path):
		uid, _ := e.backend.User().IDs()
		return fmt.Sprintf("%s is in CODEXEC_WRITABLE_ROOTS, but its permissions do not let the sandbox user (uid %d) write it, "+
			"and codexec never changes them: an operator can grant it (e.g. setfacl -m u:%d:rwx %s)", dir.Path, uid, uid, dir.Path)
	}
	return ""
}

// userCanWrite reports whether the sandbox user may create entries in dir
// (write and search permission on the directory itself; the sandbox reaches
// it through a mount, whatever its parents allow).
func (e *Engine) userCanWrite(dir string) bool {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return e.backend.User().Do(func() error { return unix.Faccessat(fd, ".", unix.W_OK|unix.X_OK, unix.AT_EACCESS) }) == nil
}

// runCode builds and runs the program; post, if non-nil, runs after the
// program ends and before the workspace is diffed. A run that arrives while
// its language's start-up check is still going does not wait for it: it
// runs at once (so the first result comes as fast as any), and only if it
// fails is the check awaited, to report a broken language as unavailable.
func (e *Engine) runCode(ctx context.Context, id, lang, dir string, disk *diskbound.Disk, req Request, post func(dir string)) Result {
	res := Result{ExecutionID: id, Language: lang, SandboxMode: e.backend.Name(), Artifacts: []string{}}
	pending := false
	if !req.NoLog { // health probes (NoLog) must not wait for themselves
		var err error
		if pending, err = e.languageErrorNow(lang); err != nil {
			return setupError(res, fmt.Sprintf("%s is unavailable on this server: %v", lang, err))
		}
	}
	out := e.buildAndRun(ctx, res, id, lang, dir, disk, req, post)
	if pending && out.Status != StatusSuccess {
		if err := e.LanguageError(lang); err != nil {
			return setupError(res, fmt.Sprintf("%s is unavailable on this server: %v", lang, err))
		}
	}
	return out
}

func (e *Engine) buildAndRun(ctx context.Context, res Result, id, lang, dir string, disk *diskbound.Disk, req Request, post func(dir string)) Result {
	prog, err := e.langs.Build(lang, req.Code, req.Args)
	var ce *runtime.CompileError
	if errors.As(err, &ce) {
		res = compileFailure(res, ce)
		res.compileErr = ce
		return res
	}
	if err != nil {
		return setupError(res, err.Error())
	}
	progDir, err := writeProgram(e.opts.SandboxDir, id, prog.Files, e.createdDir)
	defer func() {
		if progDir != "" {
			_ = e.RemoveDir(progDir)
		}
	}()
	if err != nil {
		return setupError(res, err.Error())
	}
	ws, err := e.OpenWorkspace(dir, req.dirWritable)
	if err != nil {
		return setupError(res, err.Error())
	}
	defer ws.Close()
	if prep := prepareFrom(ctx); prep != nil && !req.NoLog {
		if err := prep(ws); err != nil {
			return setupError(res, "placing uploaded files: "+err.Error())
		}
	}
	before := artifacts.Take(ws)
	spec := ProcessSpec{ID: id, Argv: prog.Argv, Dir: dir, DirWritable: req.dirWritable, Env: e.Env(lang, dir),
		Stdin: stdinReader(req.Stdin), Timeout: req.Timeout, ProgramDir: progDir, Warm: warmKind(lang),
		OnStdout: req.Observe.For("stdout"), OnStderr: req.Observe.For("stderr"), TmpDir: TmpDir(disk),
		Background: req.Background}
	if req.Cold {
		spec.Warm = ""
	}
	if req.io != nil {
		// Code mode stays on the cold path: its stdin and stdout are the
		// channel, which a warm runner's pipes do not carry.
		spec.Warm = ""
		spec.WrapStdout, spec.Limits = req.io.wrapStdout, req.io.limits
		if req.io.stdin != nil {
			spec.Stdin = req.io.stdin
		}
	}
	oc := e.RunProcess(ctx, spec)
	if post != nil {
		post(dir)
	}
	res.Diff = artifacts.Compare(before, artifacts.Take(ws))
	res.Artifacts = append(append(res.Artifacts, res.Diff.Created...), res.Diff.Modified...)
	res = NoteDiskFull(fillOutcome(res, oc, req.Timeout, e.opts.Limits.MemoryBytes), disk)
	if e.opts.AfterRun != nil && !req.NoLog {
		e.opts.AfterRun(ctx, ws, &res)
	}
	return res
}

// warmKind is the warm runner kind that can run lang's programs.
func warmKind(lang string) string {
	switch lang {
	case runtime.Python:
		return sandbox.WarmPython
	case runtime.Node, runtime.TypeScript:
		return sandbox.WarmNode
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
	return res
}

func compileFailure(res Result, ce *runtime.CompileError) Result {
	msg := ce.Error()
	res.Status = StatusExecutionError
	res.ErrorMessage = &msg
	res.Stderr = fmt.Sprintf("main.ts:%d:%d: error: %s\n    %s\n", ce.Line, ce.Column, ce.Text, ce.LineText)
	return res
}

// fillOutcome maps a process outcome onto the result's status fields.
func fillOutcome(res Result, oc Outcome, timeout time.Duration, memLimit int64) Result {
	res.Stdout, res.Stderr, res.Truncated = oc.Stdout, oc.Stderr, oc.Truncated
	res.DurationMs = oc.Duration.Milliseconds()
	res.ExecutionTime = oc.Duration.Seconds()
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
		msg = fmt.Sprintf("Execution timed out after %s.", formatSeconds(timeout))
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

func formatSeconds(d time.Duration) string {
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

// logExecution appends res to the execution log and returns "" or, when
// the entry could not be written, the error for the result's log_error.
func (e *Engine) logExecution(ctx context.Context, res Result, req Request, started time.Time) string {
	if e.log == nil {
		return ""
	}
	entry := execlog.Entry{
		ExecutionID: res.ExecutionID, SessionID: res.SessionID, Tool: req.Tool, Language: res.Language,
		Code: req.Code, Args: req.Args, ScriptName: req.ScriptName, Stdin: req.Stdin, Stdout: res.Stdout,
		Stderr: res.Stderr, ExitCode: res.ExitCode, Status: res.Status, ErrorMessage: deref(res.ErrorMessage),
		TimedOut: res.TimedOut, Truncated: res.Truncated, DurationMs: res.DurationMs, MemoryPeakMB: res.MemoryPeakMB,
		SandboxMode: res.SandboxMode, WorkingDir: res.WorkingDir, Artifacts: res.Diff, Context: req.Context,
		ExecutedAt: started.UTC(), Owner: tenant.From(ctx),
	}
	if req.io != nil {
		entry.Intent = req.io.intent
		if req.io.toolCalls != nil {
			entry.ToolCalls = req.io.toolCalls()
		}
	}
	if err := e.log.AppendExecution(entry); err != nil {
		slog.Error("execution log write failed; result still returned", "execution_id", res.ExecutionID, "err", err)
		return err.Error()
	}
	e.opts.Journal.RunEnded(res.ExecutionID, "")
	return ""
}
