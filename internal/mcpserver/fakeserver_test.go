package mcpserver_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/mcpserver"
	"github.com/codexec/codexec/internal/mcpserver/tooltest"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/packages"
	"github.com/codexec/codexec/internal/quota"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/sandbox/sandboxfake"
	"github.com/codexec/codexec/internal/scripts"
	"github.com/codexec/codexec/internal/session"
	"github.com/codexec/codexec/internal/sessionckpt"
	"github.com/codexec/codexec/internal/shell"
	"github.com/codexec/codexec/internal/upstream"
)

// fakeServer is an mcpserver.Server over in-memory parts: an engine on the
// fake sandbox backend (nothing runs, no interpreter is needed), a session
// manager on it, a directory file store keeping the files runs create, a
// script library, an execution log with its index, background runs and a
// package installer that is never asked to install. It reports what
// subprocess mode reports (not isolated), so tools/list is what a default
// server lists.
type fakeServer struct {
	*mcpserver.Server
	backend *sandboxfake.Backend
	cfg     config.Config
}

// fakeOptions choose the parts of a fakeServer that tests vary.
type fakeOptions struct {
	// script answers each run; nil: every run prints nothing and exits 0.
	script sandboxfake.Script
	// upstreams wires code mode with no upstream server, so search_tools
	// is listed.
	upstreams bool
	// tweak adjusts the defaults (toolsets, limits, allowlists).
	tweak func(*config.Config)
}

// newFakeServer builds a fakeServer in t's temporary directory; everything
// it started stops when the test ends.
func newFakeServer(t testing.TB, o fakeOptions) *fakeServer {
	t.Helper()
	dir := t.TempDir()
	cfg := config.Defaults(dir)
	cfg.SandboxMode = config.ModeSubprocess
	if o.tweak != nil {
		o.tweak(&cfg)
	}
	if o.script == nil {
		o.script = sandboxfake.Echo("")
	}
	b := sandboxfake.New(o.script, false)
	deps := mcpserver.Deps{Config: cfg, Isolated: b.Isolated(), Limiter: limiter(cfg)}
	deps.ExecLog = openLog(t, cfg.LogDir)
	deps.Files = dirStore(t, filepath.Join(cfg.DataDir, "artifacts"))
	opts := fakeEngineOptions(cfg)
	opts.AfterRun = keepArtifacts(deps.Files)
	deps.Engine = tooltest.EngineWith(t, engine.Deps{Backend: b, Languages: tooltest.Languages(), Log: deps.ExecLog}, opts)
	deps.Sessions = newSessions(t, cfg, deps.Engine, deps.ExecLog)
	deps.SessionPackages = deps.Sessions
	deps.Packages = packages.New(packages.Options{GlobalRoot: cfg.PackagesDir, Env: []string{"PATH=/nonexistent"}})
	deps.Scripts = scriptRunner(t, cfg.ScriptsDir, deps.Engine)
	deps.Logs = logIndex(t, deps.ExecLog)
	deps.Runs = runs.New(runs.Options{Dir: t.TempDir()}, runs.Deps{Store: deps.Files, History: deps.Logs})
	t.Cleanup(deps.Runs.Close)
	deps.Shell = shell.Options{Allow: shell.NewAllowlist(cfg.AllowedCommands, "/usr/bin:/bin"), Roots: shell.NewRoots(cfg.AllowedCwdRoots),
		Bash: "/bin/bash", Path: "/usr/bin:/bin", BaseDir: dir, Home: dir, SandboxMode: b.Name()}
	if o.upstreams {
		deps.Upstreams = upstream.New(nil, &upstream.Options{Version: mcpserver.Version})
		t.Cleanup(deps.Upstreams.Close)
	}
	s, err := mcpserver.New(deps)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeServer{Server: s, backend: b, cfg: cfg}
}

// fakeEngineOptions are the engine options of cfg's timeouts and output
// limits over cfg's sandbox directory.
func fakeEngineOptions(cfg config.Config) engine.Options {
	return engine.Options{
		SandboxDir: cfg.SandboxDir, DefaultTimeout: cfg.DefaultTimeout, MaxTimeout: cfg.MaxTimeout, KillGrace: cfg.KillGrace,
		Output:  output.Limits{Max: cfg.MaxOutputChars, Head: cfg.TruncationHead, Tail: cfg.TruncationTail},
		BaseEnv: []string{"PATH=/usr/bin:/bin"},
	}
}

// keepArtifacts keeps the files each logged run created in store, under
// its execution id, as the server does.
func keepArtifacts(store files.Store) func(context.Context, *files.Root, *engine.Result) {
	return func(ctx context.Context, root *files.Root, res *engine.Result) {
		if len(res.Artifacts) > 0 {
			_, _ = store.Keep(ctx, res.ExecutionID, root, res.Artifacts)
		}
	}
}

// limiter is cfg's per-principal execution quota (nil: unlimited).
func limiter(cfg config.Config) quota.Limiter {
	if l := quota.NewLocal(cfg.MaxConcurrent, cfg.QueueWait); l != nil {
		return l
	}
	return nil
}

// openLog opens the execution log in dir until the test ends.
func openLog(t testing.TB, dir string) *execlog.Logger {
	t.Helper()
	l, err := execlog.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// logIndex indexes log's directory, kept current by every append.
func logIndex(t testing.TB, log *execlog.Logger) *logindex.Index {
	t.Helper()
	idx, err := logindex.Open(log.Dir(), filepath.Join(log.Dir(), logindex.FileName))
	if err != nil {
		t.Fatal(err)
	}
	log.OnAppend(func(file string, _ int64, _ []byte) { idx.Notify(file) })
	t.Cleanup(func() { _ = idx.Close() })
	return idx
}

// dirStore is a directory file store in dir until the test ends.
func dirStore(t testing.TB, dir string) files.Store {
	t.Helper()
	s, err := files.NewDirStore(dir, files.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// newSessions is a session Manager on e with checkpoints in a directory
// store (pause, resume and fork are listed, as by default).
func newSessions(t testing.TB, cfg config.Config, e *engine.Engine, log *execlog.Logger) *session.Manager {
	t.Helper()
	c := cfg.Checkpoint
	ckpts, err := files.NewDirStore(filepath.Join(cfg.DataDir, "checkpoints"), files.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ckpts.Close)
	m := session.NewManager(session.Deps{Engine: e, Languages: tooltest.Languages(), Log: log, Checkpoints: ckpts},
		session.Options{MaxSessions: cfg.MaxSessions, MaxPerPrincipal: cfg.MaxSessionsPerPrincipal, KillGrace: cfg.KillGrace,
			DefaultTimeout: cfg.DefaultTimeout, PackagesDir: filepath.Join(cfg.SandboxDir, ".packages"), SandboxMode: config.ModeSubprocess,
			Checkpoints: sessionckpt.Options{Dir: filepath.Join(cfg.DataDir, "checkpoint-records"), MaxBytes: c.MaxBytes,
				MaxTotal: c.MaxTotal, Spares: c.Spares, MaxFork: c.MaxFork}})
	t.Cleanup(m.Close)
	return m
}

// scriptRunner runs the script library in dir on e.
func scriptRunner(t testing.TB, dir string, e *engine.Engine) *scripts.Runner {
	t.Helper()
	store, err := scripts.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &scripts.Runner{Libraries: scripts.Files(store), Engine: e}
}
