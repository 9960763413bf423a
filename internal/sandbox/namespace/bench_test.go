//go:build linux

package namespace

import (
	"context"
	"io"
	"os"
	"os/exec"
	"sort"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

// BenchmarkNamespaceStages compares, interleaved in one loop, a bare
// python3 -c 'print(1)', the same under a minimal bwrap (setpriv + bwrap
// with only /usr bound and all namespaces), and the full namespace backend
// (sandbox-init, cgroup, staging mounts, /etc files, seccomp, Landlock) and
// the same without Landlock, to show where
// the namespace overhead comes from.
//
//	go test ./internal/sandbox/ -run '^$' -bench NamespaceStages -benchtime 30x
func BenchmarkNamespaceStages(b *testing.B) {
	n, err := New(context.Background(), Options{OwnedRoot: sandboxtest.OwnedRoot})
	if err != nil {
		b.Skip(err)
	}
	defer n.Close()
	nl, err := New(context.Background(), Options{NoLandlock: true, OwnedRoot: sandboxtest.OwnedRoot})
	if err != nil {
		b.Skip(err)
	}
	defer nl.Close()
	dir := b.TempDir()
	py := []string{"/usr/bin/python3", "-c", "print(1)"}
	minimal := append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "bwrap", "--unshare-all",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--proc", "/proc", "--dev", "/dev", "--"}, py...)
	var bare, mini, full, noLL []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := exec.Command(py[0], py[1:]...).Run(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := exec.Command(minimal[0], minimal[1:]...).Run(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		full = append(full, runOnce(b, n, dir, py))
		noLL = append(noLL, runOnce(b, nl, dir, py))
		bare, mini = append(bare, t1.Sub(t0)), append(mini, t2.Sub(t1))
	}
	b.ReportMetric(medianMs(bare), "bare-ms")
	b.ReportMetric(medianMs(mini), "minimal-bwrap-ms")
	b.ReportMetric(medianMs(full), "namespace-ms")
	b.ReportMetric(medianMs(noLL), "no-landlock-ms")
}

// benchLimits are the server defaults (512 MiB, 1 CPU, 256 pids, 256 MiB /tmp).
var benchLimits = sandbox.Limits{MemoryBytes: 512 << 20, CPUs: 1, Pids: 256, DiskBytes: 256 << 20}

func runOnce(b *testing.B, n *Backend, dir string, argv []string) time.Duration {
	return runAs(b, n, dir, argv, nil)
}

// runAs times one run of argv over dir, mounted with o's rights (nil: the
// sandbox user's).
func runAs(b *testing.B, n *Backend, dir string, argv []string, o *sandbox.Owner) time.Duration {
	return timeRun(b, n, sandbox.Spec{ID: "bench", Argv: argv, Dir: dir, DirOwner: o})
}

// timeRun times one run of spec (its environment, output and limits set
// here) to its release; the run must exit 0.
func timeRun(b *testing.B, n *Backend, spec sandbox.Spec) time.Duration {
	t0 := time.Now()
	spec.Env, spec.Stdout, spec.Limits = []string{"HOME=" + spec.Dir}, io.Discard, benchLimits
	p, err := n.Start(context.Background(), spec)
	if err != nil {
		b.Fatal(err)
	}
	if ex, err := p.Wait(); err != nil || ex.Code != 0 {
		b.Fatal(ex, err)
	}
	_ = p.Release(time.Second)
	return time.Since(t0)
}

// BenchmarkWarmBash compares, interleaved in one loop, a bare `bash -c
// 'echo 1'` with the same run served by a warm bash runner (an exec
// runner: the sandbox made ahead, bash executed at take time), from Start
// to Release, each run after its runner is ready: the backend's share of
// an execute_code call (the e2e targets benchmark, P1b, has the whole).
//
//	go test ./internal/sandbox/namespace -run '^$' -bench WarmBash -benchtime 100x
func BenchmarkWarmBash(b *testing.B) {
	n, err := New(context.Background(), Options{OwnedRoot: sandboxtest.OwnedRoot,
		Pool: sandbox.PoolOptions{Size: 1, Idle: time.Minute}})
	if err != nil {
		b.Skip(err)
	}
	defer n.Close()
	dir := b.TempDir()
	argv := []string{"/usr/bin/bash", "-c", "echo 1", "bash"}
	var bare, warm []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))
		n.Prewarm(sandboxtest.WarmSpec(sandbox.WarmBash, dir, ""))
		if _, ok := n.AwaitWarm(sandbox.WarmBash, 10*time.Second); !ok {
			b.Fatal("no warm bash runner")
		}
		spec := sandboxtest.WarmSpec(sandbox.WarmBash, dir, "echo 1")
		spec.Stdout = io.Discard
		t1 := time.Now()
		p, err := n.Start(context.Background(), spec)
		if err != nil {
			b.Fatal(err)
		}
		if ex, err := p.Wait(); err != nil || ex.Code != 0 {
			b.Fatal(ex, err)
		}
		_ = p.Release(time.Second)
		warm = append(warm, time.Since(t1))
	}
	b.ReportMetric(medianMs(bare), "bare-ms")
	b.ReportMetric(medianMs(warm), "warm-ms")
	b.ReportMetric(medianMs(warm)/medianMs(bare), "ratio")
	if hits := sandboxtest.KindHits(n, sandbox.WarmBash); hits < uint64(len(warm)) {
		b.Errorf("%d of %d runs served warm", hits, len(warm))
	}
}

// BenchmarkCallerDirOwner compares, interleaved in one loop, a cold run
// over a caller's directory bound plainly with the same run over it with
// its owner's rights (an idmapped clone, Spec.DirOwner; the user namespace
// is made once and cached), and the clone itself against a plain
// open_tree clone: what owner rights add to a run.
//
//	go test ./internal/sandbox/namespace -run '^$' -bench CallerDirOwner -benchtime 30x
func BenchmarkCallerDirOwner(b *testing.B) {
	n, err := New(context.Background(), Options{OwnedRoot: sandboxtest.OwnedRoot})
	if err != nil {
		b.Skip(err)
	}
	defer n.Close()
	dir := b.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	owner := &sandbox.Owner{UID: 1234, GID: 1234}
	py := []string{"/usr/bin/python3", "-c", "print(1)"}
	run := func(o *sandbox.Owner) time.Duration { return runAs(b, n, dir, py, o) }
	clone := func(o *sandbox.Owner) time.Duration {
		t0 := time.Now()
		fd, err := n.cloneWorkspace(sandbox.Spec{Dir: dir, DirOwner: o}, true)
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		_ = unix.Close(fd)
		return d
	}
	t0 := time.Now()
	if err := n.CheckOwnerMount(dir, *owner); err != nil {
		b.Skip(err)
	}
	first := time.Since(t0) // makes the cached user namespace
	var plain, mapped, plainClone, mappedClone []time.Duration
	for b.Loop() {
		plain, mapped = append(plain, run(nil)), append(mapped, run(owner))
		plainClone, mappedClone = append(plainClone, clone(nil)), append(mappedClone, clone(owner))
	}
	b.ReportMetric(medianMs(plain), "bind-run-ms")
	b.ReportMetric(medianMs(mapped), "owner-run-ms")
	b.ReportMetric(medianMs(plainClone), "bind-clone-ms")
	b.ReportMetric(medianMs(mappedClone), "owner-clone-ms")
	b.ReportMetric(float64(first.Microseconds())/1000, "first-use-ms")
}

// medianMs is the median of ds in milliseconds (ds is sorted in place).
func medianMs(ds []time.Duration) float64 {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return float64(ds[len(ds)/2].Microseconds()) / 1000
}

// BenchmarkCaptureCold compares, interleaved in one loop, a cold python
// run on a backend without a captured network, on one with a CaptureSpec
// for a run without egress (the launcher's own network namespace, loopback
// only), and for a run whose sockets an egress owner serves (made by
// sandbox-init, received and served): what a captured network adds to a
// cold run.
//
//	go test ./internal/sandbox/namespace -run '^$' -bench CaptureCold -benchtime 30x
func BenchmarkCaptureCold(b *testing.B) {
	plain, err := New(context.Background(), Options{OwnedRoot: sandboxtest.OwnedRoot})
	if err != nil {
		b.Skip(err)
	}
	defer plain.Close()
	spec := testCaptureSpecIn(b, b.TempDir())
	captured, err := New(context.Background(), Options{OwnedRoot: sandboxtest.OwnedRoot, CaptureSpec: spec})
	if err != nil {
		b.Skip(err)
	}
	defer captured.Close()
	dir := b.TempDir()
	py := []string{"/usr/bin/python3", "-c", "print(1)"}
	var base, closed, served []time.Duration
	for b.Loop() {
		base = append(base, runOnce(b, plain, dir, py))
		closed = append(closed, runOnce(b, captured, dir, py))
		e := &echoEgress{}
		served = append(served, runServed(b, captured, dir, py, e))
		e.Close()
	}
	b.ReportMetric(medianMs(base), "plain-ms")
	b.ReportMetric(medianMs(closed), "captured-no-egress-ms")
	b.ReportMetric(medianMs(served), "captured-served-ms")
	b.ReportMetric(medianMs(served)/medianMs(base), "served-ratio")
}

// runServed times one run of argv over dir whose sockets e serves.
func runServed(b *testing.B, n *Backend, dir string, argv []string, e *echoEgress) time.Duration {
	d := timeRun(b, n, sandbox.Spec{ID: "bench", Argv: argv, Dir: dir, Egress: e})
	if e.served() != 1 {
		b.Fatalf("%d captures served", e.served())
	}
	return d
}
