package engine

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/pathguard"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/subprocess"
)

func newTestEngine(tb testing.TB) *Engine {
	tb.Helper()
	dir := tb.TempDir()
	log, err := execlog.New(filepath.Join(dir, "logs"))
	if err != nil {
		tb.Fatal(err)
	}
	langs := runtime.Discover(context.Background(), runtime.Overrides{}, os.Getenv("PATH"))
	e, err := New(Options{
		SandboxDir: filepath.Join(dir, "sandbox"), DefaultTimeout: 30 * time.Second, MaxTimeout: time.Minute,
		KillGrace: time.Second, Output: output.Limits{Max: 10000, Head: 4000, Tail: 4000},
		BaseEnv: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "TERM=dumb"}, Home: dir, BaseDir: dir,
	}, Deps{Backend: subprocess.New(sandbox.PoolOptions{}), Languages: langs, Guard: pathguard.New(pathguard.Options{Home: dir}), Log: log})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	return e
}

// BenchmarkEngineExecuteVsBare compares Engine.Execute (subprocess backend,
// no MCP) of python print(1) with a bare exec of the same interpreter, in
// one loop.
//
//	go test ./internal/engine/ -run '^$' -bench EngineExecuteVsBare -benchtime 100x
func BenchmarkEngineExecuteVsBare(b *testing.B) {
	e := newTestEngine(b)
	py := e.langs.Get(runtime.Python).Path
	if py == "" {
		b.Skip("python unavailable")
	}
	var eng, bare time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := exec.Command(py, "-c", "print(1)").Run(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		r, err := e.Execute(context.Background(), Request{Language: "python", Code: "print(1)"})
		if err != nil || r.Stdout != "1\n" {
			b.Fatalf("%v %+v", err, r)
		}
		eng += time.Since(t1)
		bare += t1.Sub(t0)
	}
	b.ReportMetric(float64(eng.Microseconds())/float64(b.N)/1000, "engine-ms/op")
	b.ReportMetric(float64(bare.Microseconds())/float64(b.N)/1000, "bare-ms/op")
	b.ReportMetric(float64(eng)/float64(bare), "ratio")
}
