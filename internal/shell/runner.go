package shell

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/errcode"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/pathguard"
	"github.com/codexec/codexec/internal/sandbox"
)

// Runner runs execute_command and execute_process requests on the engine's
// run path (engine.RunProcess). Create it with NewRunner.
type Runner struct {
	eng  *engine.Engine
	opts Options
}

// Options configure a Runner.
type Options struct {
	// Allow is the ALLOWED_COMMANDS check.
	Allow *Allowlist
	// Roots is ALLOWED_CWD_ROOTS.
	Roots Roots
	// Bash is the absolute path of the bash that runs execute_command
	// scripts (the same bash the checker's parser models); empty when
	// there is none.
	Bash string
	// Path is the PATH commands run with, used to find execute_process
	// files.
	Path string
	// BaseDir resolves relative cwd values and is the cwd when none is
	// given (the server's working directory); Home expands "~".
	BaseDir, Home string
	// Isolated: commands run in an isolated sandbox, which sees only the
	// system directories of the host.
	Isolated bool
	// SandboxMode names the isolation mode in results and messages.
	SandboxMode string
}

// NewRunner returns a Runner running commands through eng.
func NewRunner(eng *engine.Engine, opts Options) *Runner {
	return &Runner{eng: eng, opts: opts}
}

// Allowlist returns the allowlist in use.
func (r *Runner) Allowlist() *Allowlist { return r.opts.Allow }

// CommandRequest is one execute_command call. Timeout zero means the
// engine's default.
type CommandRequest struct {
	Command string
	Cwd     string
	Timeout time.Duration
	Context execlog.CallContext
	// Observe, if set, sees the command's stdout/stderr as it runs.
	Observe output.Observer
}

// ProcessRequest is one execute_process call: File run with Args, no shell.
type ProcessRequest struct {
	File    string
	Args    []string
	Input   *string
	Cwd     string
	Timeout time.Duration
	Context execlog.CallContext
	// Observe, if set, sees the program's stdout/stderr as it runs.
	Observe output.Observer
}

// Result is the outcome of a command that ran. A non-zero exit is a normal
// result; TimedOut marks a run the timeout stopped (its output is partial).
type Result struct {
	ExitCode     *int    `json:"exit_code" yaml:"exit_code" jsonschema:"exit status; null when the command was killed (timeout, signal) or never started"`
	Stdout       string  `json:"stdout" yaml:"stdout" jsonschema:"standard output (head+tail truncated when too long)"`
	Stderr       string  `json:"stderr" yaml:"stderr" jsonschema:"standard error (head+tail truncated when too long)"`
	Status       string  `json:"status" yaml:"status" jsonschema:"success | execution_error | timeout | setup_error | cancelled"`
	EndReason    string  `json:"end_reason,omitempty" yaml:"end_reason,omitempty" jsonschema:"exit|signal|oom|timeout|cancelled|disk_full|lost|not_started"`
	ErrorMessage *string `json:"error_message,omitempty" yaml:"error,omitempty" jsonschema:"why the status is not success"`
	TimedOut     bool    `json:"timed_out" yaml:"timed_out,omitempty" jsonschema:"true when the timeout stopped the command"`
	Truncated    bool    `json:"truncated" yaml:"truncated,omitempty" jsonschema:"true when stdout or stderr was truncated"`
	Cwd          string  `json:"cwd" yaml:"cwd" jsonschema:"directory the command ran in"`
	DurationMs   int64   `json:"duration_ms" yaml:"duration_ms" jsonschema:"wall time in milliseconds"`
	ExecutionID  string  `json:"execution_id" yaml:"execution_id" jsonschema:"id of this run in the execution log"`
	SandboxMode  string  `json:"sandbox_mode" yaml:"sandbox_mode" jsonschema:"isolation mode the command ran under"`
	CwdNote      string  `json:"cwd_note,omitempty" yaml:"cwd_note,omitempty" jsonschema:"how the command could use the given cwd (read-only, or unconfined in subprocess mode)"`
	LogError     string  `json:"log_error,omitempty" yaml:"log_error,omitempty" jsonschema:"set when this run could not be recorded in the execution log, and why"`
	// Limits is engine.Result's: which resource limits held and how.
	Limits *sandbox.Enforcement `json:"limits,omitempty" yaml:"limits,flow,omitempty" jsonschema:"the resource limits that held for this run and how: cgroup, rlimit per process, container, a tmpfs or disk image size, or none"`
	// Usage is engine.Result's: what the run cost, where measured.
	Usage *engine.Usage `json:"usage,omitempty" yaml:"usage,flow,omitempty" jsonschema:"what the run cost, where measured (docs/cost.md)"`
}

// Command checks req.Command against the allowlist and the cwd rules, then
// runs it with bash -c. An error means the request was rejected and nothing
// ran.
func (r *Runner) Command(ctx context.Context, req CommandRequest) (Result, error) {
	if err := r.opts.Allow.CheckScript(req.Command); err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(req.Command) == "" {
		return Result{}, errcode.New(errcode.InvalidParams, "command is empty")
	}
	dir, err := r.cwd(ctx, req.Cwd)
	if err != nil {
		return Result{}, err
	}
	if r.opts.Bash == "" {
		return Result{}, errcode.New(errcode.NotEnabled, "bash is not available on this server, so execute_command cannot run; use execute_process")
	}
	argv := []string{r.opts.Bash, "-c", req.Command}
	log := engine.Request{Tool: "execute_command", Code: req.Command, Context: req.Context, Observe: req.Observe}
	return noted(dir, r.run(ctx, "bash", argv, dir, req.Cwd, nil, req.Timeout, log)), nil
}

// Process checks req.File against the allowlist and the cwd rules, then runs
// it directly (no shell), feeding Input on stdin. An error means the request
// was rejected and nothing ran.
func (r *Runner) Process(ctx context.Context, req ProcessRequest) (Result, error) {
	if req.File == "" {
		return Result{}, errcode.New(errcode.InvalidParams, "file is required")
	}
	if err := r.opts.Allow.Allowed(req.File); err != nil {
		return Result{}, err
	}
	dir, err := r.cwd(ctx, req.Cwd)
	if err != nil {
		return Result{}, err
	}
	bin, err := lookPath(req.File, r.opts.Path)
	if err != nil {
		return Result{}, err
	}
	if r.opts.Isolated && !strings.Contains(req.File, "/") {
		// The sandbox sees only the system directories: look the program
		// up there (a host PATH entry such as a version-manager shim does
		// not exist inside).
		if bin, err = lookPath(req.File, systemPath(r.opts.Path)); err != nil {
			return Result{}, errcode.New(errcode.InvalidParams, "%s is not available inside the %s sandbox: %w", req.File, r.opts.SandboxMode, err)
		}
	}
	argv := append([]string{bin}, req.Args...)
	log := engine.Request{Tool: "execute_process", Code: quoteArgv(append([]string{req.File}, req.Args...)),
		Args: req.Args, Stdin: req.Input, Context: req.Context, Observe: req.Observe}
	return noted(dir, r.run(ctx, "process", argv, dir, req.Cwd, req.Input, req.Timeout, log)), nil
}

// cwd resolves the command's directory: ALLOWED_CWD_ROOTS first, then the
// server's policy for caller directories (forbidden and internal paths are
// refused; writable only within CODEXEC_WRITABLE_ROOTS).
func (r *Runner) cwd(ctx context.Context, cwd string) (pathguard.Dir, error) {
	c, err := r.opts.Roots.Resolve(cwd, r.opts.BaseDir, r.opts.Home)
	if err != nil {
		return pathguard.Dir{}, err
	}
	d, err := r.eng.ResolveDir(ctx, c)
	if err != nil && cwd == "" {
		// The server's own directory is refused (e.g. it is the data
		// directory): the command gets a fresh, empty one instead.
		return pathguard.Dir{}, nil
	}
	if err != nil {
		return pathguard.Dir{}, &CwdError{Msg: fmt.Sprintf("cwd %q is not allowed: %v", cwd, err)}
	}
	return d, nil
}

// noted says in the result when the command ran in a fresh directory
// because the server's own was refused (the engine notes the rest).
func noted(dir pathguard.Dir, res Result) Result {
	if dir.Path == "" {
		res.CwdNote = "the server's working directory may not be used by commands, so this one ran in a fresh empty directory"
	}
	return res
}

// run executes argv in wd (empty: a fresh empty directory; given is the
// cwd as the caller wrote it) on the engine's run path, which gives it a
// HOME of its own, logs it and maps the outcome to the result.
func (r *Runner) run(ctx context.Context, lang string, argv []string, wd pathguard.Dir, given string, stdin *string, timeout time.Duration, log engine.Request) Result {
	return fromEngine(r.eng.RunProcess(ctx, engine.ProcessRequest{Argv: argv, Lang: lang, Dir: wd, Given: given, Stdin: stdin,
		Timeout: timeout, Log: log}))
}

func fromEngine(res engine.Result) Result {
	return Result{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr, Status: res.Status,
		ErrorMessage: res.ErrorMessage, TimedOut: res.TimedOut, Truncated: res.Truncated, Cwd: res.WorkingDir,
		DurationMs: res.DurationMs, ExecutionID: res.ExecutionID, SandboxMode: res.SandboxMode, LogError: res.LogError,
		CwdNote: res.WorkingDirNote, Limits: res.Limits, EndReason: res.EndReason, Usage: res.Usage}
}

// lookPath finds file on pathEnv (absolute paths are used as given). It is
// exec.LookPath with an explicit PATH: the server's own environment is not
// consulted below main.
func lookPath(file, pathEnv string) (string, error) {
	if strings.Contains(file, "/") {
		if isExecutable(file) {
			return file, nil
		}
		return "", fmt.Errorf("%s: not an executable file", file)
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(d) {
			continue
		}
		if p := filepath.Join(d, file); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found in PATH", file)
}

// systemPath keeps the PATH entries that isolated sandboxes expose (the
// read-only system directories).
func systemPath(pathEnv string) string {
	var keep []string
	for _, d := range filepath.SplitList(pathEnv) {
		for _, sys := range []string{"/usr/", "/bin", "/sbin"} {
			if strings.HasPrefix(d, sys) {
				keep = append(keep, d)
				break
			}
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// quoteArgv renders argv as a shell-quoted line for the execution log.
func quoteArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			q = fmt.Sprintf("%q", a)
		}
		parts[i] = q
	}
	return strings.Join(parts, " ")
}
