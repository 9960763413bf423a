//go:build linux

package namespace

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

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
