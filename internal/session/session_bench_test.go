package session

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/pathguard"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/subprocess"
)

func testManager(tb testing.TB) *Manager {
	tb.Helper()
	dir := tb.TempDir()
	eng, langs, log, opts := testEngine(tb, dir)
	m := NewManager(Deps{Engine: eng, Languages: langs, Log: log}, Options{DefaultTimeout: opts.DefaultTimeout, Output: opts.Output,
		PackagesDir: filepath.Join(opts.SandboxDir, ".packages"), SandboxMode: "subprocess"})
	tb.Cleanup(m.Close)
	return m
}

// testEngine is a subprocess-mode engine logging under dir, with the
// languages found on PATH: what the session tests run on.
func testEngine(tb testing.TB, dir string) (*engine.Engine, *runtime.Set, *execlog.Logger, engine.Options) {
	tb.Helper()
	log, err := execlog.New(filepath.Join(dir, "logs"))
	if err != nil {
		tb.Fatal(err)
	}
	opts := engine.Options{SandboxDir: filepath.Join(dir, "sandbox"), DefaultTimeout: 30 * time.Second,
		MaxTimeout: time.Minute, KillGrace: time.Second, Output: output.Limits{Max: 10000, Head: 4000, Tail: 4000},
		BaseEnv: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}, BaseDir: dir}
	langs := runtime.Discover(context.Background(), runtime.Overrides{}, os.Getenv("PATH"))
	eng, err := engine.New(opts, engine.Deps{Backend: subprocess.New(sandbox.PoolOptions{}), Languages: langs,
		Guard: pathguard.New(pathguard.Options{Home: dir}), Log: log})
	if err != nil {
		tb.Fatal(err)
	}
	return eng, langs, log, opts
}

// BenchmarkManagerExec measures Manager.Exec of `x += 1` in a python
// session without MCP in between, once the session's empty workspace is
// quiet (files.QuietFor), as in a session's steady state.
//
//	go test ./internal/session/ -run '^$' -bench ManagerExec -benchtime 2000x
func BenchmarkManagerExec(b *testing.B) {
	m := testManager(b)
	info, err := m.Start(context.Background(), StartRequest{Kind: KindSession, Language: "python"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := m.Exec(ctx, ExecRequest{Session: info.ID, Code: "x = 0"}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(files.QuietFor)
	for b.Loop() {
		if r, err := m.Exec(ctx, ExecRequest{Session: info.ID, Code: "x += 1"}); err != nil || !r.Success {
			b.Fatal(err, r)
		}
	}
}
