// Package app assembles codexec from its parts: it turns a parsed Config and
// the host facts main collected into a sandbox backend, interpreters, the
// execution log, the engine and the MCP server, and runs it. It is the only
// place that knows how the packages fit together.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/inflight"
	"github.com/codexec/codexec/internal/mcpserver"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/packages"
	"github.com/codexec/codexec/internal/pgstore"
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/quota"
	"github.com/codexec/codexec/internal/recovery"
	"github.com/codexec/codexec/internal/replicas"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/session"
	"github.com/codexec/codexec/internal/shell"
	"github.com/codexec/codexec/internal/transfer"
	"github.com/codexec/codexec/internal/upstream"
)

// HostEnv are the facts about the host that main reads from the process
// environment; nothing below main reads the environment itself.
type HostEnv struct {
	Home, Path, Lang, Term, Cwd string
	// Installer is the package installers' environment ("K=V"): the
	// operator's installer settings from packages.SelectEnv. Never passed
	// to sandboxed code.
	Installer []string
	// Environ is codexec's whole environment ("K=V"), used only to expand
	// ${VAR} in upstream server settings; never passed to sandboxed code.
	Environ []string
	// Rootless: this server runs without root in a user namespace of its
	// own (package rootless), where the namespace sandbox works as the
	// user. NoRootless, for a server without root outside one, says why
	// it is not in one (nil when it is root).
	Rootless   bool
	NoRootless error
}

// Serve runs the MCP server on stdio (or Streamable HTTP when
// CODEXEC_HTTP_ADDR is set) until the client disconnects or ctx ends.
func Serve(ctx context.Context, cfg config.Config, env HostEnv) error {
	closeLog, err := setupLogging(cfg)
	if err != nil {
		return err
	}
	defer closeLog()
	for _, w := range cfg.Warnings {
		slog.Warn("configuration adjusted", "reason", w)
	}
	// Started before any run and stopped after every run ended: if the
	// server is killed, the watchdog ends its runs.
	if err := proc.StartWatchdog(); err != nil {
		slog.Warn("could not start the watchdog that ends runs when the server dies; if the server is killed, its runs go on until the next start", "err", err)
	}
	defer proc.StopWatchdog()
	// Build gets a context that SIGTERM does not cancel: the background
	// health check must not fail the calls that wait for it while they
	// drain. Close stops it.
	a, err := Build(context.WithoutCancel(ctx), cfg, env)
	if err != nil {
		return err
	}
	defer a.Close()
	if cfg.Remote.HTTPAddr != "" {
		return a.serveHTTP(ctx, cfg)
	}
	return a.serveStdio(ctx, cfg)
}

// App is an assembled server. Close releases everything it started.
type App struct {
	Engine  *engine.Engine
	Server  *mcpserver.Server
	closers []func()
	// The parts the engine runs on, kept here so that nothing asks the
	// engine for them.
	backend sandbox.Backend
	langs   *runtime.Set
	logger  *execlog.Logger
	// upstreams are code mode's upstream MCP servers (nil when none).
	upstreams *upstream.Manager
	// store is the shared store CODEXEC_STORE names (nil: embedded).
	store *pgstore.Store
	// replicas is this server among the replicas sharing store's session
	// registry (nil: alone).
	replicas *replicas.Set
	// transfers issues the URLs of transfer "url" (nil when they are off).
	transfers *transfer.Tickets
	// sessions is the session Manager (its drain pauses the sessions when
	// replicas share paused sessions).
	sessions *session.Manager
	// egress serves the network of runs that have one (nil: off).
	egress *egress.Service
	// console is what the web console reads (wireConsole).
	console consoleParts
	// draining is set once a shutdown began: /readyz then fails.
	draining atomic.Bool
}

// Close stops sessions and closes logs, in reverse order of creation.
// Build registers a closer as soon as it has started a part, so Close (and
// Build's own rollback) releases exactly what was started.
func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

// Build assembles the server without serving it, running the start-up
// health check. When it fails it first undoes what it did: everything it
// started is closed again (warm runners, cgroups, disks, sessions, logs).
// Each step registers its closers as soon as it started something.
func Build(ctx context.Context, cfg config.Config, env HostEnv) (_ *App, retErr error) {
	a := &App{}
	defer func() {
		if retErr != nil {
			a.Close()
		}
	}()
	if err := makeDirs(cfg); err != nil {
		return nil, err
	}
	opts, store, err := a.buildRunSetup(ctx, cfg, env)
	if err != nil {
		return nil, err
	}
	if a.egress, err = buildEgress(cfg); err != nil {
		return nil, err
	}
	if err := a.buildBackend(ctx, cfg, env, &opts); err != nil {
		return nil, err
	}
	if err := a.buildLog(ctx, cfg); err != nil {
		return nil, err
	}
	a.buildReplicas(cfg)
	a.recoverAndJournal(cfg, &opts)
	if err := a.buildEngine(ctx, cfg, env, opts); err != nil {
		return nil, err
	}
	installer, err := newInstaller(cfg, env, a.langs)
	if err != nil {
		return nil, err
	}
	if err := a.buildSessions(ctx, cfg, opts); err != nil {
		return nil, err
	}
	if err := a.buildServer(ctx, cfg, env, serverParts{store: store, installer: installer}); err != nil {
		return nil, err
	}
	return a, nil
}

// makeDirs creates codexec's own directories. The log directory is not
// among them: a log that cannot be written degrades the server
// (warnLogUnwritable) instead of stopping it.
func makeDirs(cfg config.Config) error {
	for _, d := range []string{cfg.DataDir, cfg.SandboxDir, cfg.ScriptsDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	privateDirs(internalDirs(cfg))
	return nil
}

// buildRunSetup finds the interpreters and makes the engine's options:
// the global packages and the file store runs get.
func (a *App) buildRunSetup(ctx context.Context, cfg config.Config, env HostEnv) (engine.Options, files.Store, error) {
	a.langs = runtime.Discover(ctx, runtime.Overrides(cfg.Interpreters), env.Path)
	opts := engineOptions(cfg, env)
	if err := addGlobalPackages(&opts, cfg.PackagesDir); err != nil {
		return opts, nil, err
	}
	store, err := a.buildFiles(ctx, cfg, &opts)
	return opts, store, err
}

// buildBackend selects the sandbox backend and opens the bounded disks
// for it (opts.Disks). python's first warm runner starts with the backend,
// beside its start-up probe, so the first python run after a start finds
// it warm.
func (a *App) buildBackend(ctx context.Context, cfg config.Config, env HostEnv, opts *engine.Options) error {
	var first []sandbox.Spec
	if spec, ok := engine.PrewarmSpec(*opts, a.langs, runtime.Python); ok {
		first = append(first, spec)
	}
	backend, err := SelectBackend(ctx, cfg, env, a.langs, a.egress.Capture(), first...)
	if err != nil {
		return err
	}
	a.backend = backend
	if c, ok := backend.(io.Closer); ok {
		a.closers = append(a.closers, func() { _ = c.Close() })
	}
	disks := openDisks(cfg, backend)
	if disks != nil {
		a.closers = append(a.closers, func() { _ = disks.Close() })
	}
	opts.Disks = disks
	return nil
}

// buildLog opens the execution log (an unwritable one degrades the server
// with a warning) and the shared store CODEXEC_STORE names.
func (a *App) buildLog(ctx context.Context, cfg config.Config) error {
	logger, err := execlog.New(cfg.LogDir)
	if err != nil {
		return err
	}
	a.logger = logger
	a.closers = append(a.closers, func() { _ = logger.Close() })
	if err := logger.Probe(); err != nil {
		warnLogUnwritable(err)
	}
	return a.openStore(ctx, cfg, logger)
}

// recoverAndJournal closes what killed servers left open (package
// recovery), before this one records its own work and after the backend
// killed what their runs left running and openDisks detached their bounded
// disks; then it opens this server's in-flight journal (opts.Journal).
func (a *App) recoverAndJournal(cfg config.Config, opts *engine.Options) {
	recovery.Run(cfg.LogDir, cfg.ScriptsDir, cfg.SandboxDir, a.logger)
	var err error
	if opts.Journal, err = inflight.Open(recovery.JournalDir(cfg.LogDir)); err != nil {
		// Like the log itself, an unwritable journal degrades the server:
		// it serves, but a kill leaves its runs unreported as lost.
		slog.Error("in-flight journal unavailable: serving anyway; runs in flight if this server is killed will not be logged as lost", "err", err)
		opts.Journal = nil
	}
	// Closed (removed) last: a clean shutdown has ended every run and
	// session by then.
	journal := opts.Journal
	a.closers = append(a.closers, func() { _ = journal.Close() })
}

// buildEngine makes the engine, starts the warm runners for the first
// runs (python first, ahead of the health probes) and the health check.
func (a *App) buildEngine(ctx context.Context, cfg config.Config, env HostEnv, opts engine.Options) error {
	var err error
	a.Engine, err = engine.New(opts, engine.Deps{Backend: a.backend, Languages: a.langs, Guard: newGuard(cfg, env), Log: a.logger, Egress: a.egress})
	if err != nil {
		return err
	}
	a.closers = append(a.closers, a.Engine.Close) // before disks and backend close
	a.Engine.Prewarm(runtime.Python, runtime.Node)
	a.startHealthCheck(ctx, cfg.HealthCheck == config.HealthStartup)
	return nil
}

// buildSessions makes the session Manager, with the replicas' claims and
// the checkpoint store when configured.
func (a *App) buildSessions(ctx context.Context, cfg config.Config, opts engine.Options) error {
	sdeps := session.Deps{Engine: a.Engine, Languages: a.langs, Log: a.logger, Journal: opts.Journal, Egress: a.egress}
	if a.replicas != nil {
		sdeps.Claims = a.replicas
	}
	ckpts, ckptOpts, err := a.buildCheckpoints(ctx, cfg)
	if err != nil {
		return err
	}
	sdeps.Checkpoints = ckpts
	sessions := session.NewManager(sdeps,
		session.Options{MaxSessions: cfg.MaxSessions, IdleTimeout: cfg.SessionIdleTimeout, KillGrace: cfg.KillGrace,
			MaxPerPrincipal: cfg.MaxSessionsPerPrincipal, DefaultTimeout: opts.DefaultTimeout, Output: opts.Output,
			PackagesDir: filepath.Join(opts.SandboxDir, ".packages"), SandboxMode: a.backend.Name(), Checkpoints: ckptOpts})
	a.closers = append(a.closers, sessions.Close)
	a.sessions = sessions
	return nil
}

// serverParts are the parts Build made earlier that only the MCP server
// takes.
type serverParts struct {
	store     files.Store
	installer *packages.Installer
}

// buildServer gathers the MCP server's dependencies (limiter, files,
// transfers, history, runs, upstreams) and makes the server.
func (a *App) buildServer(ctx context.Context, cfg config.Config, env HostEnv, p serverParts) error {
	deps := mcpserver.Deps{Config: cfg, Engine: a.Engine, Sessions: a.sessions, Packages: p.installer, SessionPackages: a.sessions,
		Isolated: a.backend.Isolated(), Shell: shellOptions(cfg, env, a.backend, a.langs), ExecLog: a.logger, Egress: a.egress}
	if l := quota.NewLocal(cfg.MaxConcurrent, cfg.QueueWait); l != nil {
		deps.Limiter = l
	}
	gate, err := buildApproval(cfg, runPath(env))
	if err != nil {
		return err
	}
	deps.Approval = gate
	deps.Files = p.store
	deps.Transfers = a.buildTransfers(cfg.Remote)
	if a.replicas != nil {
		deps.Replicas = a.replicas
	}
	if err := a.buildHistory(ctx, cfg, &deps); err != nil {
		return err
	}
	a.buildRuns(cfg, p.store, &deps)
	a.console = consoleParts{history: deps.Logs, files: p.store, runs: deps.Runs}
	if err := a.startUpstreams(ctx, cfg, env, &deps); err != nil {
		return err
	}
	a.Server, err = mcpserver.New(deps)
	return err
}

// startUpstreams connects code mode's upstream servers, if any
// (deps.Upstreams), logging their state once the first attempts ended.
func (a *App) startUpstreams(ctx context.Context, cfg config.Config, env HostEnv, deps *mcpserver.Deps) error {
	var err error
	if deps.Upstreams, err = NewUpstreams(cfg, env); err != nil {
		return err
	}
	a.upstreams = deps.Upstreams
	if deps.Upstreams != nil {
		deps.Upstreams.Start()
		a.closers = append(a.closers, deps.Upstreams.Close)
		go logUpstreams(ctx, deps.Upstreams)
	}
	return nil
}

func engineOptions(cfg config.Config, env HostEnv) engine.Options {
	return engine.Options{
		SandboxDir: cfg.SandboxDir, DefaultTimeout: cfg.DefaultTimeout, MaxTimeout: cfg.MaxTimeout, KillGrace: cfg.KillGrace,
		Output:  output.Limits{Max: cfg.MaxOutputChars, Head: cfg.TruncationHead, Tail: cfg.TruncationTail},
		Limits:  sandbox.Limits{MemoryBytes: cfg.MemoryLimitBytes, CPUs: cfg.CPULimit, Pids: cfg.PidsLimit, DiskBytes: cfg.DiskLimitBytes},
		BaseEnv: BaseEnv(env), Home: env.Home, BaseDir: env.Cwd,
	}
}

// BaseEnv is what every run inherits besides HOME: PATH, LANG and TERM only
// (a stripped environment: nothing else of the server's leaks into runs),
// with safe fallbacks.
func BaseEnv(env HostEnv) []string {
	path := runPath(env)
	lang := env.Lang
	if lang == "" {
		lang = "C.UTF-8"
	}
	term := env.Term
	if term == "" {
		term = "dumb"
	}
	return []string{"PATH=" + path, "LANG=" + lang, "TERM=" + term}
}

// runPath is the PATH every run inherits: the server's, or a safe default.
func runPath(env HostEnv) string {
	if env.Path == "" {
		return "/usr/local/bin:/usr/bin:/bin"
	}
	return env.Path
}

// startupProbeDelay holds the background health probes back so that the
// first calls after a start have the CPU; a call
// that needs a result starts them at once.
const startupProbeDelay = time.Second

// startHealthCheck tries every language once through the sandbox, in the
// background, so initialize is answered at once; runs do not wait for it, a
// failed run or a session start does (engine). The summary is logged when
// all are done. Failing languages are marked unavailable by the engine; the
// rest keep working. wait makes Build run it at once and wait for it (the
// CODEXEC_HEALTH_CHECK=startup behaviour). Close cancels and awaits it.
func (a *App) startHealthCheck(ctx context.Context, wait bool) {
	ctx, cancel := context.WithCancel(ctx)
	start := time.Now()
	delay := startupProbeDelay
	if wait {
		delay = 0
	}
	results := a.Engine.StartHealthCheck(ctx, delay)
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		a.logHealth(<-results, start)
	}()
	if wait {
		<-logged
	}
	a.closers = append(a.closers, func() { cancel(); <-logged })
}

func (a *App) logHealth(res map[string]error, start time.Time) {
	var ok, bad []string
	for _, lang := range []string{runtime.Python, runtime.Node, runtime.Bash} {
		in := a.langs.Get(lang)
		if err := res[lang]; err != nil {
			bad = append(bad, lang)
			slog.Error("language unavailable", "language", lang, "err", err)
			continue
		}
		ok = append(ok, lang+"="+in.Path)
	}
	slog.Info("health check", "sandbox", a.backend.Name(), "ok", strings.Join(ok, " "),
		"unavailable", strings.Join(bad, " "), "ms", time.Since(start).Milliseconds())
}

func setupLogging(cfg config.Config) (func(), error) {
	var w io.Writer = os.Stderr
	closeFn := func() {}
	if cfg.ServerLogFile != "" {
		f, err := os.OpenFile(cfg.ServerLogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("CODEXEC_SERVER_LOG_FILE: %w", err)
		}
		w, closeFn = f, func() { _ = f.Close() }
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	slog.SetDefault(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})))
	return closeFn, nil
}

// shellOptions configures execute_command and execute_process.
func shellOptions(cfg config.Config, env HostEnv, backend sandbox.Backend, langs *runtime.Set) shell.Options {
	path := runPath(env)
	return shell.Options{Allow: shell.NewAllowlist(cfg.AllowedCommands, path), Roots: shell.NewRoots(cfg.AllowedCwdRoots),
		Bash: langs.Get(runtime.Bash).Path, Path: path, BaseDir: env.Cwd, Home: env.Home,
		Isolated: backend.Isolated(), SandboxMode: backend.Name()}
}
