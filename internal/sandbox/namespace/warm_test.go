//go:build linux

package namespace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

func newWarmNamespace(t *testing.T, size int) *Backend {
	t.Helper()
	return newPoolNamespace(t, sandbox.PoolOptions{Size: size, Idle: time.Minute})
}

// newForkNamespace has python runners forked from a zygote (skips where
// the kernel cannot).
func newForkNamespace(t *testing.T, size int) *Backend {
	t.Helper()
	n := newPoolNamespace(t, sandbox.PoolOptions{Size: size, Idle: time.Minute, Fork: true})
	if !n.forkEnabled() {
		t.Skip("python fork-servers need Landlock ABI 6")
	}
	return n
}

func newPoolNamespace(t *testing.T, o sandbox.PoolOptions) *Backend {
	t.Helper()
	n, err := New(context.Background(), Options{Pool: o, OwnedRoot: sandboxtest.OwnedRoot})
	if err != nil {
		t.Skipf("namespace backend unavailable: %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// TestWarmMatchesCold runs the same programs warm and cold and expects the
// same observable result.
func TestWarmMatchesCold(t *testing.T) {
	t.Run("runner", func(t *testing.T) { testWarmMatchesCold(t, newWarmNamespace(t, 1), false) })
	t.Run("fork", func(t *testing.T) { testWarmMatchesCold(t, newForkNamespace(t, 1), true) })
}

func testWarmMatchesCold(t *testing.T, n *Backend, fork bool) {
	dir := t.TempDir()
	cold := newTestNamespace(t)
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, kind, code string }{
		{"py identity", sandbox.WarmPython, "import os,sys; print(os.getuid(), os.getcwd(), os.environ['HOME'], sys.argv, open('in.txt').read())"},
		{"py passwd home", sandbox.WarmPython, "import pwd,os; print(pwd.getpwuid(os.getuid()).pw_dir)"},
		{"py write", sandbox.WarmPython, "open('out.txt','w').write('x'); open('/tmp/t','w').write('y'); print('ok')"},
		{"py error", sandbox.WarmPython, "x = 1/0"},
		{"py exit", sandbox.WarmPython, "import sys; sys.exit(7)"},
		{"py exit msg", sandbox.WarmPython, "import sys; sys.exit('bye')"},
		{"py stdin", sandbox.WarmPython, "import sys; print(repr(sys.stdin.read()))"},
		{"py env", sandbox.WarmPython, "import os; print(sorted(k for k in os.environ))"},
		{"py globals", sandbox.WarmPython, "print(sorted(globals()))"},
		{"py exit big", sandbox.WarmPython, "import sys; sys.exit(258)"},
		{"py exit none", sandbox.WarmPython, "raise SystemExit"},
		{"py atexit", sandbox.WarmPython, "import atexit,sys; atexit.register(lambda: print('bye')); atexit.register(sys.exit, 4); print('hi', end='')"},
		{"py thread", sandbox.WarmPython, "import threading,time\ne = threading.Event()\ndef f(): e.wait(); time.sleep(0.05); print('late')\nthreading.Thread(target=f).start(); print('main'); e.set()"},
		{"py error atexit", sandbox.WarmPython, "import atexit; atexit.register(print, 'cleanup'); [][1]"},
		{"py unflushed", sandbox.WarmPython, "import sys; sys.stdout.write('partial'); sys.stderr.write('err')"},
		{"py os._exit", sandbox.WarmPython, "import os; print('x', flush=True); os._exit(3)"},
		{"py child keeps stdout", sandbox.WarmPython, "import subprocess,sys; subprocess.Popen([sys.executable,'-c','import time; time.sleep(0.3); print(1)']); print('parent')"},
		{"py fake status", sandbox.WarmPython, "import os; [os.write(fd, b'X0\\n') for fd in range(3, 1024) if os.path.exists('/proc/self/fd/%d' % fd)]; print('went on')"},
		{"py modules", sandbox.WarmPython, "import sys; print(sorted(sys.modules))"},
		{"py landlock", sandbox.WarmPython, "import os\ntry:\n open('/.x','w')\nexcept OSError as e: print(e.errno)"},
		{"node basics", sandbox.WarmNode, "process.argv.splice(1,0,'[eval]');console.log(process.getuid(), process.cwd(), process.env.HOME, process.argv.slice(1), require('fs').readFileSync('in.txt','utf8'), __filename)"},
		{"node error", sandbox.WarmNode, "null.x"},
		{"node exit", sandbox.WarmNode, "process.exit(5)"},
		// ls alone: in a pipeline, whether grep already runs when ls reads
		// /proc is up to the scheduler.
		{"sh pids", sandbox.WarmBash, "echo $$ $PPID; ls /proc > /tmp/p; grep -c '^[0-9]' /tmp/p"},
		{"sh passwd home", sandbox.WarmBash, "getent passwd $(id -u) | cut -d: -f6; hostname"},
		{"sh landlock", sandbox.WarmBash, "echo x > /.x; echo $?; touch /tmp/ok && echo tmp"},
	}
	for _, c := range sandboxtest.BashCases {
		cases = append(cases, struct{ name, kind, code string }{"sh " + c.Name, sandbox.WarmBash, c.Code})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := sandboxtest.WarmSpec(c.kind, dir, c.code, "a1")
			sandboxtest.WaitReady(t, n, spec)
			before, forked := sandboxtest.KindHits(n, c.kind), sandboxtest.ForkHits(n)
			in := "stdin-data"
			spec.Stdin = strings.NewReader(in)
			w := sandboxtest.Run(t, n, spec)
			if sandboxtest.KindHits(n, c.kind) != before+1 {
				t.Fatalf("run was not served warm: %+v", n.PoolStats())
			}
			if want := fork && c.kind == sandbox.WarmPython; (sandboxtest.ForkHits(n) == forked+1) != want {
				t.Fatalf("served by a forked runner: %v, want %v: %+v", !want, want, n.PoolStats())
			}
			spec.Stdin = strings.NewReader(in)
			spec.Warm = ""
			c := sandboxtest.Run(t, cold, spec)
			w.Exit.MemoryPeakBytes, c.Exit.MemoryPeakBytes = 0, 0
			if w.Exit.Usage.Path != proc.PathWarm || c.Exit.Usage.Path != proc.PathCold {
				t.Errorf("sandbox paths %q and %q, want warm and cold", w.Exit.Usage.Path, c.Exit.Usage.Path)
			}
			// What each used differs by design (a cold run's rusage, the path).
			w.Exit.Usage, c.Exit.Usage = proc.Usage{}, proc.Usage{}
			if w.Exit != c.Exit || w.Stdout != c.Stdout || !sameStderr(w.Stderr, c.Stderr) {
				t.Fatalf("warm %+v %q %q\ncold %+v %q %q", w.Exit, w.Stdout, w.Stderr, c.Exit, c.Stdout, c.Stderr)
			}
		})
	}
}

// TestWarmBashSemantics: bash runs served by exec runners keep the
// semantics every backend's warm runs keep (sandboxtest.WarmSemantics).
func TestWarmBashSemantics(t *testing.T) {
	dir := t.TempDir()
	sandboxtest.WarmSemantics(t, newWarmNamespace(t, 1), sandbox.WarmBash, dir, dir, 65534)
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

// TestEarlyStatusThenSpin: a python program that closes its output, forges
// its exit status and keeps running ends its own run early; it is then
// killed (earlyStatusGrace) and nothing of it is left after Close.
func TestEarlyStatusThenSpin(t *testing.T) {
	fdsBefore := sandboxtest.CountFDs(t)
	n := newPoolNamespace(t, sandbox.PoolOptions{Size: 1, Idle: time.Minute})
	dir := t.TempDir()
	spec := sandboxtest.WarmSpec(sandbox.WarmPython, dir, "import os\nos.closerange(1, 3)\nos.write(1023, b'X0\\n')\nwhile True: pass")
	sandboxtest.WaitReady(t, n, spec)
	t0 := time.Now()
	r := sandboxtest.Run(t, n, spec)
	if d := time.Since(t0); d > 5*time.Second || r.Exit.Code != 0 {
		t.Fatalf("run took %v and ended %+v; want the forged status 0 at once", d, r.Exit)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	sandboxtest.CheckNoLeaks(t, fdsBefore)
}
