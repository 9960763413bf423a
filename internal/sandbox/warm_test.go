package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func newWarmNamespace(t *testing.T, size int) *Namespace {
	t.Helper()
	return newPoolNamespace(t, PoolOptions{Size: size, Idle: time.Minute})
}

// newForkNamespace has python runners forked from a zygote (skips where
// the kernel cannot).
func newForkNamespace(t *testing.T, size int) *Namespace {
	t.Helper()
	n := newPoolNamespace(t, PoolOptions{Size: size, Idle: time.Minute, Fork: true})
	if !n.forkEnabled() {
		t.Skip("python fork-servers need Landlock ABI 6")
	}
	return n
}

func newPoolNamespace(t *testing.T, o PoolOptions) *Namespace {
	t.Helper()
	n, err := NewNamespace(context.Background(), NamespaceOptions{Pool: o, OwnedRoot: testOwnedRoot})
	if err != nil {
		t.Skipf("namespace backend unavailable: %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// warmSpec is a python or node run as the engine builds it.
func warmSpec(kind, dir, code string, args ...string) Spec {
	argv := []string{"/usr/bin/python3", "-c", code}
	if kind == WarmNode {
		argv = []string{"/usr/bin/node", "-e", code}
	}
	return Spec{ID: "w", Argv: append(argv, args...), Dir: dir, Warm: kind,
		Env:    []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "LANG=C.UTF-8"},
		Limits: Limits{MemoryBytes: 256 << 20, Pids: 64, DiskBytes: 16 << 20}}
}

type runResult struct {
	exit           Exit
	stdout, stderr string
}

func runSpec(t *testing.T, b Backend, spec Spec) runResult {
	t.Helper()
	var out, errb bytes.Buffer
	spec.Stdout, spec.Stderr = &out, &errb
	p, err := b.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(time.Second); err != nil {
		t.Errorf("release: %v", err)
	}
	return runResult{ex, out.String(), errb.String()}
}

// waitReady waits until the pool has a ready runner for spec (after one
// run has made the demand known).
func waitReady(t *testing.T, n *Namespace, spec Spec) {
	t.Helper()
	kind := spec.Warm
	if !slices.ContainsFunc(n.PoolStats(), func(s PoolStat) bool { return s.Kind == kind }) {
		runSpec(t, n, spec)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range n.PoolStats() {
			if s.Kind == kind && s.Ready > 0 {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no warm %s runner became ready: %+v", kind, n.PoolStats())
}

func hits(n *Namespace, kind string) uint64 {
	var h uint64
	for _, s := range n.PoolStats() {
		if s.Kind == kind {
			h += s.Hits
		}
	}
	return h
}

// forkHits counts runs served by forked runners.
func forkHits(n *Namespace) uint64 {
	var h uint64
	for _, s := range n.PoolStats() {
		if strings.HasPrefix(s.Key, "fork ") {
			h += s.Hits
		}
	}
	return h
}

// TestWarmMatchesCold runs the same programs warm and cold and expects the
// same observable result.
func TestWarmMatchesCold(t *testing.T) {
	t.Run("runner", func(t *testing.T) { testWarmMatchesCold(t, newWarmNamespace(t, 1), false) })
	t.Run("fork", func(t *testing.T) { testWarmMatchesCold(t, newForkNamespace(t, 1), true) })
}

func testWarmMatchesCold(t *testing.T, n *Namespace, fork bool) {
	dir := t.TempDir()
	cold := newTestNamespace(t)
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, kind, code string }{
		{"py identity", WarmPython, "import os,sys; print(os.getuid(), os.getcwd(), os.environ['HOME'], sys.argv, open('in.txt').read())"},
		{"py passwd home", WarmPython, "import pwd,os; print(pwd.getpwuid(os.getuid()).pw_dir)"},
		{"py write", WarmPython, "open('out.txt','w').write('x'); open('/tmp/t','w').write('y'); print('ok')"},
		{"py error", WarmPython, "x = 1/0"},
		{"py exit", WarmPython, "import sys; sys.exit(7)"},
		{"py exit msg", WarmPython, "import sys; sys.exit('bye')"},
		{"py stdin", WarmPython, "import sys; print(repr(sys.stdin.read()))"},
		{"py env", WarmPython, "import os; print(sorted(k for k in os.environ))"},
		{"py globals", WarmPython, "print(sorted(globals()))"},
		{"py exit big", WarmPython, "import sys; sys.exit(258)"},
		{"py exit none", WarmPython, "raise SystemExit"},
		{"py atexit", WarmPython, "import atexit,sys; atexit.register(lambda: print('bye')); atexit.register(sys.exit, 4); print('hi', end='')"},
		{"py thread", WarmPython, "import threading,time\ne = threading.Event()\ndef f(): e.wait(); time.sleep(0.05); print('late')\nthreading.Thread(target=f).start(); print('main'); e.set()"},
		{"py error atexit", WarmPython, "import atexit; atexit.register(print, 'cleanup'); [][1]"},
		{"py unflushed", WarmPython, "import sys; sys.stdout.write('partial'); sys.stderr.write('err')"},
		{"py os._exit", WarmPython, "import os; print('x', flush=True); os._exit(3)"},
		{"py child keeps stdout", WarmPython, "import subprocess,sys; subprocess.Popen([sys.executable,'-c','import time; time.sleep(0.3); print(1)']); print('parent')"},
		{"py fake status", WarmPython, "import os; [os.write(fd, b'X0\\n') for fd in range(3, 1024) if os.path.exists('/proc/self/fd/%d' % fd)]; print('went on')"},
		{"py modules", WarmPython, "import sys; print(sorted(sys.modules))"},
		{"py landlock", WarmPython, "import os\ntry:\n open('/.x','w')\nexcept OSError as e: print(e.errno)"},
		{"node basics", WarmNode, "process.argv.splice(1,0,'[eval]');console.log(process.getuid(), process.cwd(), process.env.HOME, process.argv.slice(1), require('fs').readFileSync('in.txt','utf8'), __filename)"},
		{"node error", WarmNode, "null.x"},
		{"node exit", WarmNode, "process.exit(5)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := warmSpec(c.kind, dir, c.code, "a1")
			waitReady(t, n, spec)
			before, forked := hits(n, c.kind), forkHits(n)
			in := "stdin-data"
			spec.Stdin = strings.NewReader(in)
			w := runSpec(t, n, spec)
			if hits(n, c.kind) != before+1 {
				t.Fatalf("run was not served warm: %+v", n.PoolStats())
			}
			if want := fork && c.kind == WarmPython; (forkHits(n) == forked+1) != want {
				t.Fatalf("served by a forked runner: %v, want %v: %+v", !want, want, n.PoolStats())
			}
			spec.Stdin = strings.NewReader(in)
			spec.Warm = ""
			c := runSpec(t, cold, spec)
			w.exit.MemoryPeakBytes, c.exit.MemoryPeakBytes = 0, 0
			if w.exit != c.exit || w.stdout != c.stdout || !sameStderr(w.stderr, c.stderr) {
				t.Fatalf("warm %+v %q %q\ncold %+v %q %q", w.exit, w.stdout, w.stderr, c.exit, c.stdout, c.stderr)
			}
		})
	}
}

// sameStderr compares error output up to node's internal stack frames,
// which differ between `node -e` and the runner's evaluation.
func sameStderr(a, b string) bool {
	trim := func(s string) string {
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "at ") && !strings.Contains(l, "[eval]:") {
				continue
			}
			keep = append(keep, l)
		}
		return strings.Join(keep, "\n")
	}
	return trim(a) == trim(b)
}
