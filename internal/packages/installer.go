package packages

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/proc"
)

// Options configure an Installer. Zero values are noted per field.
type Options struct {
	// Python is the host python whose pip installs python packages (the
	// interpreter the sandboxes run). Empty: python installs fail with an error.
	Python string
	// NPM is the npm executable. Empty: node installs fail with an error.
	NPM string
	// Env is the installers' complete environment ("K=V"): PATH, HOME, LANG
	// and the operator's installer settings (see SelectEnv). Nothing else is
	// inherited; in particular none of it reaches sandboxed code.
	Env []string
	// PipIndexURL and NPMRegistry are the operator's index/registry
	// (--index-url, --registry). Empty: the installer's own configuration.
	PipIndexURL, NPMRegistry string
	// Timeout bounds one install; zero means 5 minutes.
	Timeout time.Duration
	// Output bounds install_output (head+tail). Zero Max keeps 4000 chars.
	Output output.Limits
	// GlobalRoot holds global installs (CODEXEC_PACKAGES_DIR); see Dir.
	GlobalRoot string
	// Blocklist refuses operator-blocked names; nil blocks nothing.
	Blocklist *Blocklist
}

// Request is one install: Package (a ParseSpec string) for Language into
// Dir, a host directory (a python --target or an npm --prefix).
type Request struct {
	Language string
	Package  string
	Dir      string
	// Observe, if set, sees the installer's combined output (as "stdout")
	// while it runs.
	Observe output.Observer
}

// Result is how an install ended. A failed install (unknown package, no
// matching version, network error, timeout) is a Result with Success false,
// not an error.
type Result struct {
	Success bool
	Spec    Spec
	// Version is the installed version read back from the package's own
	// metadata; empty when the install failed.
	Version string
	// Output is the installer's combined stdout and stderr, head+tail trimmed.
	Output string
	// Error says why Success is false; empty on success.
	Error    string
	Duration time.Duration
}

// Installer runs pip and npm. It is safe for concurrent use; installs into
// the same directory are serialized.
type Installer struct {
	opts  Options
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// New returns an Installer.
func New(opts Options) *Installer {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Minute
	}
	if opts.Output.Max <= 0 {
		opts.Output = output.Limits{Max: 4000, Head: 1500, Tail: 2000}
	}
	return &Installer{opts: opts, locks: map[string]*sync.Mutex{}}
}

// Check validates pkg for language and applies the blocklist. It runs nothing.
func (in *Installer) Check(language, pkg string) (Spec, error) {
	s, err := ParseSpec(language, pkg)
	if err != nil {
		return Spec{}, err
	}
	return s, in.opts.Blocklist.Check(s)
}

// Install validates the request (an error, nothing run, when invalid or
// blocked), then runs the installer into req.Dir and reads back the
// installed version.
func (in *Installer) Install(ctx context.Context, req Request) (Result, error) {
	spec, err := in.Check(req.Language, req.Package)
	if err != nil {
		return Result{}, err
	}
	argv, err := in.argv(spec, req.Dir)
	if err != nil {
		return Result{}, err
	}
	if err := os.MkdirAll(req.Dir, 0o755); err != nil {
		return Result{}, fmt.Errorf("package directory: %w", err)
	}
	unlock := in.lock(req.Dir)
	defer unlock()
	res := Result{Spec: spec}
	start := time.Now()
	res.Output, err = in.run(ctx, argv, installerName(spec), req.Observe)
	res.Duration = time.Since(start)
	if err == nil {
		if spec.Language == Python {
			pruneStaleDistInfo(req.Dir)
		}
		res.Version, err = InstalledVersion(spec, req.Dir)
	}
	if err != nil {
		res.Error = err.Error()
	} else {
		res.Success = true
	}
	slog.Info("package install", "language", spec.Language, "package", spec.Arg(), "dir", req.Dir,
		"success", res.Success, "version", res.Version, "ms", res.Duration.Milliseconds(), "err", res.Error)
	return res, nil
}

func (in *Installer) lock(dir string) func() {
	in.mu.Lock()
	l := in.locks[dir]
	if l == nil {
		l = &sync.Mutex{}
		in.locks[dir] = l
	}
	in.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// argv builds the installer command. The package argument always starts
// with a letter, digit or "@" (never "-"), so it cannot be read as an option.
func (in *Installer) argv(s Spec, dir string) ([]string, error) {
	if s.Language == Python {
		if in.opts.Python == "" {
			return nil, errors.New("python is not available on this server: cannot install python packages")
		}
		argv := []string{in.opts.Python, "-m", "pip", "install", "--target", dir, "--upgrade", "--no-input",
			"--disable-pip-version-check", "--no-warn-script-location", "--progress-bar", "off", "--only-binary=:all:"}
		if in.opts.PipIndexURL != "" {
			argv = append(argv, "--index-url", in.opts.PipIndexURL)
		}
		return append(argv, s.Arg()), nil
	}
	if in.opts.NPM == "" {
		return nil, errors.New("npm is not available on this server: cannot install node packages")
	}
	argv := []string{in.opts.NPM, "install", "--prefix", dir, "--no-audit", "--no-fund", "--ignore-scripts",
		"--no-update-notifier", "--loglevel=warn"}
	if in.opts.NPMRegistry != "" {
		argv = append(argv, "--registry", in.opts.NPMRegistry)
	}
	return append(argv, s.Arg()), nil
}

// run executes argv in an empty private directory (so no file in the
// server's cwd can be mistaken for the package) with the timeout, killing
// the installer's whole process group when it expires.
func (in *Installer) run(ctx context.Context, argv []string, name string, obs output.Observer) (string, error) {
	work, err := os.MkdirTemp("", "codexec-install-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	ctx, cancel := context.WithTimeout(ctx, in.opts.Timeout)
	defer cancel()
	sink := output.NewSink(in.opts.Output, obs.For("stdout"))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// pip warns at length when run as root; the target is a private directory, not the system.
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = work, append(in.opts.Env[:len(in.opts.Env):len(in.opts.Env)], "PIP_ROOT_USER_ACTION=ignore"), sink, sink
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err = runGuarded(cmd)
	out, _ := sink.Result()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return out, fmt.Errorf("installer timed out after %v", in.opts.Timeout)
	case err != nil:
		return out, fmt.Errorf("%s install failed (%v); see install_output", name, err)
	}
	return out, nil
}

// runGuarded runs cmd, its process group registered with the server's
// watchdog (proc.GuardGroup) while it runs: an install outlives no killed
// server. The group is killed before it is released, as its pgid could be
// reused once it is empty.
func runGuarded(cmd *exec.Cmd) error {
	wait, err := proc.StartTracked(cmd)
	if err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	proc.GuardGroup(pgid)
	err = wait()
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	proc.UnguardGroup(pgid)
	return err
}

func installerName(s Spec) string {
	if s.Language == Python {
		return "pip"
	}
	return "npm"
}
