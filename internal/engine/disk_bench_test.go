package engine

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/diskbound"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/pathguard"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/namespace"
)

// BenchmarkDiskBoundCost measures what bounding the disk costs a run: the
// same python print(1) through Engine.Execute under the namespace backend,
// interleaved in one loop, with a 256 MiB bounded disk (workspace and /tmp
// on a pooled loop-mounted ext4) and without (host workspace directory,
// tmpfs /tmp).
//
//	go test ./internal/engine/ -run '^$' -bench DiskBoundCost -benchtime 100x
func BenchmarkDiskBoundCost(b *testing.B) {
	dir := b.TempDir()
	helper := filepath.Join(dir, sandbox.HelperName)
	if out, err := exec.Command("go", "build", "-o", helper, "github.com/codexec/codexec/cmd/codexec-sandbox").CombinedOutput(); err != nil {
		b.Fatalf("build %s: %v\n%s", sandbox.HelperName, err, out)
	}
	ns, err := namespace.New(context.Background(), namespace.Options{Exe: helper, OwnedRoot: dir})
	if err != nil {
		b.Skip(err)
	}
	defer ns.Close()
	disks, err := diskbound.New(diskbound.Options{Dir: filepath.Join(dir, "bounded", ".disks"), Bytes: 256 << 20})
	if err != nil {
		b.Skip(err)
	}
	defer disks.Close()
	langs := runtime.Discover(context.Background(), runtime.Overrides{}, os.Getenv("PATH"))
	if langs.Get(runtime.Python).Path == "" {
		b.Skip("python unavailable")
	}
	mk := func(sub string, d *diskbound.Set) *Engine {
		e, err := New(Options{
			SandboxDir: filepath.Join(dir, sub), DefaultTimeout: 30 * time.Second, MaxTimeout: time.Minute,
			KillGrace: time.Second, Output: output.Limits{Max: 10000, Head: 4000, Tail: 4000},
			Limits:  sandbox.Limits{MemoryBytes: 256 << 20, Pids: 64, DiskBytes: 256 << 20},
			BaseEnv: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "TERM=dumb"}, Home: dir, BaseDir: dir, Disks: d,
		}, Deps{Backend: ns, Languages: langs, Guard: pathguard.New(pathguard.Options{Home: dir})})
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	plain, bounded := mk("plain", nil), mk("bounded", disks)
	defer plain.Close() // before disks.Close: workspace removals use the disks
	defer bounded.Close()
	run := func(e *Engine) time.Duration {
		t0 := time.Now()
		r, err := e.Execute(context.Background(), Request{Language: "python", Code: "open('/tmp/x','w').write('x')\nprint(1)", NoLog: true})
		if err != nil || r.Stdout != "1\n" {
			b.Fatalf("%v %+v", err, r)
		}
		return time.Since(t0)
	}
	run(plain)
	run(bounded)
	var tp, tb time.Duration
	for b.Loop() {
		tp += run(plain)
		tb += run(bounded)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tp.Microseconds())/n/1000, "plain-ms/op")
	b.ReportMetric(float64(tb.Microseconds())/n/1000, "bounded-ms/op")
	b.ReportMetric(float64(tb)/float64(tp), "ratio")
}
