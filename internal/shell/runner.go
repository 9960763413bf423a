package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/pathguard"
)

// Runner runs execute_command and execute_process requests through the
// engine's shared runner. Create it with NewRunner.
type Runner struct {
	eng   *engine.Engine
	allow *Allowlist
	roots Roots
	bash  string
	path  string
}

// NewRunner returns a Runner. bash is the absolute path of the bash that runs
// execute_command scripts (the same bash the checker's parser models); path
// is the PATH commands run with, used to find execute_process files.
func NewRunner(eng *engine.Engine, allow *Allowlist, roots Roots, bash, path string) *Runner {
	return &Runner{eng: eng, allow: allow, roots: roots, bash: bash, path: path}
}

// Allowlist returns the allowlist in use.
func (r *Runner) Allowlist() *Allowlist { return r.allow }

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
	ErrorMessage *string `json:"error_message,omitempty" yaml:"error,omitempty" jsonschema:"why the status is not success"`
	TimedOut     bool    `json:"timed_out" yaml:"timed_out,omitempty" jsonschema:"true when the timeout stopped the command"`
	Truncated    bool    `json:"truncated" yaml:"truncated,omitempty" jsonschema:"true when stdout or stderr was truncated"`
	Cwd          string  `json:"cwd" yaml:"cwd" jsonschema:"directory the command ran in"`
	DurationMs   int64   `json:"duration_ms" yaml:"duration_ms" jsonschema:"wall time in milliseconds"`
	ExecutionID  string  `json:"execution_id" yaml:"execution_id" jsonschema:"id of this run in the execution log"`
	SandboxMode  string  `json:"sandbox_mode" yaml:"sandbox_mode" jsonschema:"isolation mode the command ran under"`
	CwdNote      string  `json:"cwd_note,omitempty" yaml:"cwd_note,omitempty" jsonschema:"how the command could use the given cwd (read-only, or unconfined in subprocess mode)"`
	LogError     string  `json:"log_error,omitempty" yaml:"log_error,omitempty" jsonschema:"set when this run could not be recorded in the execution log, and why"`
}

// Command checks req.Command against the allowlist and the cwd rules, then
// runs it with bash -c. An error means the request was rejected and nothing
// ran.
func (r *Runner) Command(ctx context.Context, req CommandRequest) (Result, error) {
	if err := r.allow.CheckScript(req.Command); err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(req.Command) == "" {
		return Result{}, errors.New("command is empty")
	}
	dir, err := r.cwd(req.Cwd)
	if err != nil {
		return Result{}, err
	}
	if r.bash == "" {
		return Result{}, errors.New("bash is not available on this server, so execute_command cannot run; use execute_process")
	}
	argv := []string{r.bash, "-c", req.Command}
	log := engine.Request{Tool: "execute_command", Code: req.Command, Context: req.Context, Observe: req.Observe}
	return r.noted(req.Cwd, dir, r.run(ctx, "bash", argv, dir, nil, req.Timeout, log)), nil
}

// Process checks req.File against the allowlist and the cwd rules, then runs
// it directly (no shell), feeding Input on stdin. An error means the request
// was rejected and nothing ran.
func (r *Runner) Process(ctx context.Context, req ProcessRequest) (Result, error) {
	if req.File == "" {
		return Result{}, errors.New("file is required")
	}
	if err := r.allow.Allowed(req.File); err != nil {
		return Result{}, err
	}
	dir, err := r.cwd(req.Cwd)
	if err != nil {
		return Result{}, err
	}
	bin, err := lookPath(req.File, r.path)
	if err != nil {
		return Result{}, err
	}
	if r.eng.Backend().Isolated() && !strings.Contains(req.File, "/") {
		// The sandbox sees only the system directories: look the program
		// up there (a host PATH entry such as a version-manager shim does
		// not exist inside).
		if bin, err = lookPath(req.File, systemPath(r.path)); err != nil {
			return Result{}, fmt.Errorf("%s is not available inside the %s sandbox: %w", req.File, r.eng.Backend().Name(), err)
		}
	}
	argv := append([]string{bin}, req.Args...)
	log := engine.Request{Tool: "execute_process", Code: quoteArgv(append([]string{req.File}, req.Args...)),
		Args: req.Args, Stdin: req.Input, Context: req.Context, Observe: req.Observe}
	return r.noted(req.Cwd, dir, r.run(ctx, "process", argv, dir, req.Input, req.Timeout, log)), nil
}

// cwd resolves the command's directory: ALLOWED_CWD_ROOTS first, then the
// server's policy for caller directories (forbidden and internal paths are
// refused; writable only within CODEXEC_WRITABLE_ROOTS).
func (r *Runner) cwd(cwd string) (pathguard.Dir, error) {
	opts := r.eng.Options()
	c, err := r.roots.Resolve(cwd, opts.BaseDir, opts.Home)
	if err != nil {
		return pathguard.Dir{}, err
	}
	d, err := r.eng.ResolveDir(c)
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

// noted adds what the result must say about a caller's cwd.
func (r *Runner) noted(given string, dir pathguard.Dir, res Result) Result {
	res.CwdNote = r.eng.WorkingDirNote(given, dir)
	if dir.Path == "" {
		res.CwdNote = "the server's working directory may not be used by commands, so this one ran in a fresh empty directory"
	}
	return res
}

// run executes argv in dir through engine.RunProcess. HOME is a fresh
// per-run directory (removed afterwards): it keeps tools from writing into
// the server's home and gives the run a unique environment marker, which the
// subprocess backend uses to find and kill the run's escaped children.
func (r *Runner) run(ctx context.Context, lang string, argv []string, wd pathguard.Dir, stdin *string, timeout time.Duration, log engine.Request) Result {
	dir := wd.Path
	if timeout == 0 {
		timeout = r.eng.Options().DefaultTimeout
	}
	id := execlog.NewID("exec_")
	started := time.Now()
	home, cleanup, err := r.home(id)
	if err != nil {
		return r.failed(id, lang, dir, fmt.Sprintf("cannot create the run's home directory: %v", err))
	}
	defer cleanup()
	// An empty wd is a fresh workspace of codexec's own (bounded as a
	// whole); a caller's directory is a host directory, only /tmp is.
	owned := dir == ""
	if owned {
		if dir, err = r.eng.NewWorkspace(id + "_cwd"); err != nil {
			return r.failed(id, lang, dir, err.Error())
		}
		defer os.RemoveAll(dir)
	}
	disk, err := r.eng.BoundDisk(dir, owned)
	if err != nil {
		return r.failed(id, lang, dir, err.Error())
	}
	if disk != nil {
		defer disk.Release()
	}
	spec := engine.ProcessSpec{ID: id, Argv: argv, Dir: dir, DirWritable: wd.Writable, Env: r.eng.Env(lang, home), Timeout: timeout,
		Network: !r.eng.Backend().Isolated(), TmpDir: engine.TmpDir(disk),
		OnStdout: log.Observe.For("stdout"), OnStderr: log.Observe.For("stderr")}
	if stdin != nil {
		spec.Stdin = strings.NewReader(*stdin)
	}
	r.eng.LogStarted(ctx, id, lang, dir, log, started)
	oc := r.eng.RunProcess(ctx, spec)
	res := engine.NoteDiskFull(r.eng.OutcomeResult(id, lang, oc, timeout), disk)
	res.WorkingDir = dir
	res.LogError = r.eng.LogResult(ctx, res, log, started)
	return fromEngine(res)
}

// home returns the run's HOME. In subprocess mode it is a fresh directory
// (removed by cleanup), which also marks the run's processes for the orphan
// sweep. Isolated modes use the sandbox's private /tmp, which vanishes with
// the run and needs no host directory.
func (r *Runner) home(id string) (string, func(), error) {
	if r.eng.Backend().Isolated() {
		return "/tmp", func() {}, nil
	}
	home, err := r.eng.NewWorkspace(id)
	if err != nil {
		return "", nil, err
	}
	return home, func() { _ = r.eng.RemoveDir(home) }, nil
}

func (r *Runner) failed(id, lang, dir, msg string) Result {
	return Result{Status: engine.StatusSetupError, ErrorMessage: &msg, Cwd: dir, ExecutionID: id, SandboxMode: r.eng.Backend().Name()}
}

func fromEngine(res engine.Result) Result {
	return Result{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr, Status: res.Status,
		ErrorMessage: res.ErrorMessage, TimedOut: res.TimedOut, Truncated: res.Truncated, Cwd: res.WorkingDir,
		DurationMs: res.DurationMs, ExecutionID: res.ExecutionID, SandboxMode: res.SandboxMode, LogError: res.LogError}
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
