//go:build linux

package namespace

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

// TestForkedSiblingsIsolated runs two forked runners of one zygote at the
// same time: the second must not see the first's processes, files, abstract
// socket or hostname change, nor signal it.
func TestForkedSiblingsIsolated(t *testing.T) {
	n := newForkNamespace(t, 2)
	dir, dir2 := t.TempDir(), t.TempDir()
	first := sandboxtest.WarmSpec(sandbox.WarmPython, dir, `
import os, socket, subprocess, sys, time
open("/tmp/secret-a", "w").write("a")
srv = socket.socket(socket.AF_UNIX); srv.bind("\0codexec-sibling-a"); srv.listen()
sleeper = subprocess.Popen(["sleep", "30"])
print(os.getpid(), sleeper.pid, flush=True)
time.sleep(20)
`)
	sandboxtest.WaitReady(t, n, sandboxtest.WarmSpec(sandbox.WarmPython, dir, "pass")) // same kind, quick
	before := sandboxtest.ForkHits(n)
	pr, pw := io.Pipe()
	first.Stdout = pw
	var errA bytes.Buffer
	first.Stderr = &errA
	a, err := n.Start(context.Background(), first)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Release(time.Second) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("first run: %v %s", err, errA.String())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if len(strings.Fields(line)) != 2 {
		t.Fatalf("first run printed %q", line)
	}
	probe := sandboxtest.WarmSpec(sandbox.WarmPython, dir2, `
import os, socket, signal
procs = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
cmds = [open("/proc/%d/cmdline" % p, "rb").read() for p in procs]
print("procs", len(procs), any(b"sleep" in c for c in cmds))
print("tmp", os.path.exists("/tmp/secret-a"))
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0codexec-sibling-a"); print("socket connected")
except OSError as e:
    print("socket refused")
print("hostname", socket.gethostname())
`)
	sandboxtest.WaitReady(t, n, probe)
	got := sandboxtest.Run(t, n, probe)
	if sandboxtest.ForkHits(n) < before+2 {
		t.Fatalf("runs were not both forked: %+v", n.PoolStats())
	}
	want := "procs 1 False\ntmp False\nsocket refused\nhostname codexec\n"
	if got.Stdout != want {
		t.Fatalf("second run saw the first:\n%s\nstderr: %s", got.Stdout, got.Stderr)
	}
}

// TestForkedTerminate stops forked runs with SIGTERM, as a timeout does. A
// forked program is pid 1 of its pid namespace, which the kernel spares from
// signals without a handler; it must still end as a program that is not an
// init would: at once by SIGTERM without a handler, through its handler with
// one, and not at all while it ignores the signal.
func TestForkedTerminate(t *testing.T) {
	n := newForkNamespace(t, 1)
	dir := t.TempDir()
	sandboxtest.WaitReady(t, n, sandboxtest.WarmSpec(sandbox.WarmPython, dir, "pass"))
	cases := []struct {
		name, code string
		want       sandbox.Exit
		stdout     string
		ends       bool
	}{
		{"default action", "import time\nprint('up', flush=True)\ntime.sleep(30)",
			sandbox.Exit{Code: -1, Signal: 15}, "up\n", true},
		{"handler", "import os, signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *a: (os.write(1, b'handled\\n'), sys.exit(3)))\nprint('up', flush=True)\ntime.sleep(30)",
			sandbox.Exit{Code: 3}, "up\nhandled\n", true},
		{"ignored", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('up', flush=True)\ntime.sleep(30)",
			sandbox.Exit{Code: -1, Signal: 9}, "up\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := sandboxtest.ForkHits(n)
			spec := sandboxtest.WarmSpec(sandbox.WarmPython, dir, c.code)
			pr, pw := io.Pipe()
			spec.Stdout = pw
			var stderr bytes.Buffer
			spec.Stderr = &stderr
			p, err := n.Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			released := false
			defer func() {
				if !released {
					_ = p.Release(time.Second)
				}
			}()
			out := bufio.NewReader(pr)
			if line, err := out.ReadString('\n'); err != nil || line != "up\n" {
				t.Fatalf("first line %q, %v", line, err)
			}
			if sandboxtest.ForkHits(n) != before+1 {
				t.Fatalf("the run was not forked: %+v", n.PoolStats())
			}
			rest := make(chan string, 1)
			go func() { b, _ := io.ReadAll(out); rest <- string(b) }()
			_ = p.Terminate()
			done := make(chan sandbox.Exit, 1)
			go func() { ex, _ := p.Wait(); done <- ex }()
			var ex sandbox.Exit
			select {
			case ex = <-done:
				if !c.ends {
					t.Fatalf("a run that ignores SIGTERM ended: %+v", ex)
				}
			case <-time.After(2 * time.Second):
				if c.ends {
					t.Fatal("SIGTERM did not end the run within 2 s")
				}
				_ = p.Kill()
				ex = <-done
			}
			released = true
			_ = p.Release(time.Second) // its output drained into pw and stderr
			_ = pw.Close()
			ex.MemoryPeakBytes = 0
			ex.Usage = proc.Usage{} // measurements, not the exit this test pins
			got := sandboxtest.Result{Exit: ex, Stdout: "up\n" + <-rest, Stderr: stderr.String()}
			if diff := cmp.Diff(sandboxtest.Result{Exit: c.want, Stdout: c.stdout}, got); diff != "" {
				t.Errorf("run (-want +got):\n%s", diff)
			}
			sandboxtest.WaitReady(t, n, spec)
		})
	}
}

// TestForkedMountsBelowTmp gives forked runs a read-only mount below /tmp
// (a data directory there): each child's private /tmp must still show it,
// read-only.
func TestForkedMountsBelowTmp(t *testing.T) {
	n := newForkNamespace(t, 1)
	dir, shared := t.TempDir(), t.TempDir()
	if !strings.HasPrefix(shared, "/tmp/") {
		t.Skip("TMPDIR is not /tmp")
	}
	if err := os.WriteFile(filepath.Join(shared, "data"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := sandboxtest.WarmSpec(sandbox.WarmPython, dir, `
import errno, sys
print(open(sys.argv[1] + "/data").read())
try:
    open(sys.argv[1] + "/new", "w")
except OSError as e:
    print(errno.errorcode[e.errno])
`, shared)
	spec.Mounts = []sandbox.Mount{{Host: shared, Target: shared, ReadOnly: true}}
	sandboxtest.WaitReady(t, n, spec)
	before := sandboxtest.ForkHits(n)
	got := sandboxtest.Run(t, n, spec)
	if sandboxtest.ForkHits(n) != before+1 {
		t.Fatalf("the run was not forked: %+v", n.PoolStats())
	}
	if got.Stdout != "kept\nEROFS\n" {
		t.Fatalf("got %q, stderr %s", got.Stdout, got.Stderr)
	}
}

// TestForkedLoopback: a forked run has its own loopback, up, as runs in
// every other mode do (a program that serves and calls itself on
// 127.0.0.1), and nothing else.
func TestForkedLoopback(t *testing.T) {
	n := newForkNamespace(t, 1)
	spec := sandboxtest.WarmSpec(sandbox.WarmPython, t.TempDir(), `
import os, socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
socket.create_connection(s.getsockname()).sendall(b"ok")
print(s.accept()[0].recv(2).decode(), sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else "")
`)
	sandboxtest.WaitReady(t, n, spec)
	before := sandboxtest.ForkHits(n)
	got := sandboxtest.Run(t, n, spec)
	if sandboxtest.ForkHits(n) != before+1 {
		t.Fatalf("the run was not forked: %+v", n.PoolStats())
	}
	if !strings.HasPrefix(got.Stdout, "ok") {
		t.Fatalf("got %q, stderr %s", got.Stdout, got.Stderr)
	}
}
