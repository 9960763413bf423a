// Package engine performs one execution end to end: validate the request,
// prepare the workspace, build the program for its language, run it under the
// sandbox backend with a timeout and bounded output capture, diff the
// workspace for artifacts, and append the result to the execution log.
//
// It is the one run path: one-shot code (Execute, with a side channel for
// code mode), one-shot argv programs (RunProcess, the shell tools) and the
// long-lived interpreters of sessions (StartProcess) all get their sandbox
// spec (mounts, limits, environment, bounded disk) built here, the same way.
// Everything else an Engine needs it is given at New (Options, Deps); its
// users get what they need from whoever made it, not from the Engine: it
// has no getters.
//
// An Engine is safe for concurrent use; each Execute call is independent.
package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/diskbound"
	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/errcode"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/inflight"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/pathguard"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
)

// Options configure an Engine. Zero durations and limits are invalid except
// where noted.
type Options struct {
	// SandboxDir holds per-run workspaces (created if missing).
	SandboxDir     string
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	KillGrace      time.Duration
	Output         output.Limits
	// Limits are passed to isolated backends; zero fields mean no limit.
	Limits sandbox.Limits
	// BaseEnv is the environment every run gets besides HOME (normally PATH,
	// LANG, TERM from the server's environment). HOME is set per run.
	BaseEnv []string
	// ExtraEnv returns additional variables per language (e.g. PYTHONPATH
	// for installed packages); may be nil.
	ExtraEnv func(lang string) []string
	// Mounts are added to every run (e.g. global package directories).
	Mounts []sandbox.Mount
	// Home expands "~" in working_dir.
	Home string
	// BaseDir resolves relative working_dir values (the server's cwd).
	BaseDir string
	// Disks, if set, bounds the bytes and inodes of every workspace and its
	// /tmp together (see BoundDisk); nil leaves /tmp to the backend.
	Disks *diskbound.Set
	// AfterRun, if set, runs after every logged one-shot run (Execute and
	// code mode), once artifacts are known and before a fresh workspace is
	// removed: the files toolset keeps the artifacts there. It gets the
	// workspace opened with the sandbox user's rights (OpenWorkspace),
	// whatever backend or runner ran the code.
	AfterRun func(ctx context.Context, ws *files.Root, res *Result)
	// Journal, if set, records the runs in flight and the directories made
	// for them (package inflight); nil records nothing.
	Journal *inflight.Journal
}

// Deps are what an Engine runs on, made by the caller (the app).
type Deps struct {
	// Backend starts the sandboxed processes.
	Backend sandbox.Backend
	// Languages are the interpreters found on the host.
	Languages *runtime.Set
	// Guard checks callers' directories (working_dir, cwd).
	Guard *pathguard.Guard
	// Log is the execution log; nil logs nothing.
	Log *execlog.Logger
	// Egress serves the network of runs that have one (Request.Network);
	// nil: no run has network.
	Egress *egress.Service
}

// Engine runs code. Create it with New.
type Engine struct {
	opts    Options
	backend sandbox.Backend
	langs   *runtime.Set
	guard   *pathguard.Guard
	log     *execlog.Logger
	egress  *egress.Service

	mu          sync.RWMutex
	unavailable map[string]error
	checking    map[string]chan struct{} // per language, closed when its health check is done (health.go)
	// kickCheck, closed once (kickOnce), starts delayed health probes now.
	kickCheck chan struct{}
	kickOnce  sync.Once
	// cleanups counts workspace removals still running (later).
	cleanups sync.WaitGroup
}

// later runs fn off the caller's path; Close waits for it.
func (e *Engine) later(fn func()) {
	e.cleanups.Add(1)
	go func() {
		defer e.cleanups.Done()
		fn()
	}()
}

// Close waits for the workspace removals of finished runs. Runs must not
// start during or after Close.
func (e *Engine) Close() {
	e.cleanups.Wait()
}

// New returns an Engine; it creates opts.SandboxDir if missing.
func New(opts Options, deps Deps) (*Engine, error) {
	if err := os.MkdirAll(opts.SandboxDir, 0o700); err != nil {
		return nil, fmt.Errorf("engine: sandbox dir: %w", err)
	}
	return &Engine{opts: opts, backend: deps.Backend, langs: deps.Languages, guard: deps.Guard, log: deps.Log, egress: deps.Egress,
		unavailable: map[string]error{}, kickCheck: make(chan struct{})}, nil
}

// LanguageError reports why a canonical language cannot run, or nil. While
// the language's start-up health check is still running it waits for it.
func (e *Engine) LanguageError(lang string) error {
	if err := e.langs.Get(lang).Err; err != nil {
		return err
	}
	if lang == runtime.TypeScript {
		lang = runtime.Node
	}
	e.awaitCheck(lang)
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.unavailable[lang]
}

// languageErrorNow is LanguageError without waiting: pending reports that
// the language's start-up check has not finished (err is then nil).
func (e *Engine) languageErrorNow(lang string) (pending bool, err error) {
	if err := e.langs.Get(lang).Err; err != nil {
		return false, err
	}
	if lang == runtime.TypeScript {
		lang = runtime.Node
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if ch := e.checking[lang]; ch != nil {
		select {
		case <-ch:
		default:
			return true, nil
		}
	}
	return false, e.unavailable[lang]
}

func runEnv(opts Options, lang, home string) []string {
	env := append([]string{"HOME=" + home}, opts.BaseEnv...)
	if opts.ExtraEnv != nil {
		env = append(env, opts.ExtraEnv(lang)...)
	}
	return env
}

// newDir creates a fresh directory named id under SandboxDir (a workspace,
// a run's HOME); remove it with removeDir.
func (e *Engine) newDir(id string) (string, error) {
	dir := filepath.Join(e.opts.SandboxDir, id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("create workspace: %w", err)
	}
	e.createdDir(dir)
	return dir, nil
}

// ResolveTimeout turns the request's timeout fields into a duration: at most
// one of timeoutMs (milliseconds) and timeoutSec (seconds, 1–300) may be set,
// and neither may exceed CODEXEC_MAX_TIMEOUT_MS. Values are range-checked
// before they become a Duration, so no value can overflow into a negative
// or tiny timeout.
func (e *Engine) ResolveTimeout(timeoutMs, timeoutSec *int) (time.Duration, error) {
	return resolveTimeout(timeoutMs, timeoutSec, e.opts.DefaultTimeout, e.opts.MaxTimeout)
}

// ResolveTimeoutUpTo is ResolveTimeout for runs with a cap of their own
// (background runs): def when neither field is set, at most max, and the
// messages name setting as the cap.
func (e *Engine) ResolveTimeoutUpTo(timeoutMs, timeoutSec *int, def, max time.Duration, setting string) (time.Duration, error) {
	return resolveTimeoutNamed(timeoutMs, timeoutSec, def, max, setting)
}

// maxTimeoutSeconds is the largest timeout in seconds.
const maxTimeoutSeconds = 300

func resolveTimeout(timeoutMs, timeoutSec *int, def, max time.Duration) (time.Duration, error) {
	return resolveTimeoutNamed(timeoutMs, timeoutSec, def, max, "CODEXEC_MAX_TIMEOUT_MS")
}

// resolveTimeoutNamed is resolveTimeout with the cap's setting named.
func resolveTimeoutNamed(timeoutMs, timeoutSec *int, def, max time.Duration, setting string) (time.Duration, error) {
	switch {
	case timeoutMs != nil && timeoutSec != nil:
		return 0, errcode.New(errcode.InvalidParams, "give either timeout_ms (milliseconds) or timeout (seconds), not both")
	case timeoutSec != nil:
		hi := min(maxTimeoutSeconds, int64(max/time.Second))
		if hi < 1 {
			return 0, errcode.New(errcode.InvalidParams, "timeout (seconds) cannot be used: the server maximum is %d ms (%s); give timeout_ms", max.Milliseconds(), setting)
		}
		if n := int64(*timeoutSec); n < 1 || n > hi {
			return 0, errcode.New(errcode.InvalidParams, "timeout must be between 1 and %d seconds%s, got %d", hi, maxNote(hi < maxTimeoutSeconds, setting), n)
		}
		return time.Duration(*timeoutSec) * time.Second, nil
	case timeoutMs != nil:
		if n, hi := int64(*timeoutMs), max.Milliseconds(); n < 1 || n > hi {
			return 0, errcode.New(errcode.InvalidParams, "timeout_ms must be between 1 and %d (%s), got %d", hi, setting, n)
		}
		return time.Duration(*timeoutMs) * time.Millisecond, nil
	}
	return def, nil
}

// maxNote names the setting that lowered a bound below its usual value.
func maxNote(lowered bool, setting string) string {
	if lowered {
		return " (" + setting + ")"
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
