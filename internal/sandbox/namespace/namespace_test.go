//go:build linux

package namespace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

// TestMain lets the test binary act as the helper (sandbox-init,
// sandbox-landlock), as the codexec binary does.
func TestMain(m *testing.M) { sandboxtest.Main(m) }

func newTestNamespace(t *testing.T) *Backend {
	t.Helper()
	n, err := New(context.Background(), Options{OwnedRoot: sandboxtest.OwnedRoot})
	if err != nil {
		t.Skipf("namespace backend unavailable: %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

func runNS(t *testing.T, n *Backend, dir string, lim sandbox.Limits, argv ...string) (sandbox.Exit, string, string, time.Duration) {
	t.Helper()
	var out, errb bytes.Buffer
	t0 := time.Now()
	p, err := n.Start(context.Background(), sandbox.Spec{ID: "t", Argv: argv, Dir: dir, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + dir},
		Stdout: &out, Stderr: &errb, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	ex, err := p.Wait()
	t2 := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(time.Second); err != nil {
		t.Errorf("release: %v", err)
	}
	t.Logf("start %v wait %v release %v", t1.Sub(t0), t2.Sub(t1), time.Since(t2))
	return ex, out.String(), errb.String(), time.Since(t0)
}

// hostMountsNamespace is a backend whose bwrap starts from the host's
// mount namespace (staging mounts, no template): bwrap is named through a
// link outside /usr.
func hostMountsNamespace(t *testing.T) *Backend {
	t.Helper()
	dir, err := os.MkdirTemp("", "codexec-bwrap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	link := filepath.Join(dir, "bwrap")
	if err := errors.Join(os.Chmod(dir, 0o755), os.Symlink("/usr/bin/bwrap", link)); err != nil {
		t.Fatal(err)
	}
	n, err := New(context.Background(), Options{OwnedRoot: sandboxtest.OwnedRoot, Bwrap: link})
	if err != nil {
		t.Skipf("namespace backend unavailable: %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	if n.tmpl != nil {
		t.Fatal("a bwrap outside /usr still started from the template")
	}
	return n
}

// TestNamespaceBasics runs the same checks with bwrap started from the
// template namespace and from the host's.
func TestNamespaceBasics(t *testing.T) {
	for _, m := range []struct {
		name string
		n    func(*testing.T) *Backend
	}{{"template", newTestNamespace}, {"host mounts", hostMountsNamespace}} {
		t.Run(m.name, func(t *testing.T) { namespaceBasics(t, m.n(t)) })
	}
}

func namespaceBasics(t *testing.T, n *Backend) {
	dir := t.TempDir()
	cases := []struct {
		name string
		argv []string
		want string
		code int
	}{
		{"identity", []string{"/bin/sh", "-c", "id -u; id -g; pwd"}, "65534\n65534\n" + dir + "\n", 0},
		{"user and group names", []string{"/bin/sh", "-c", "id -un; id -gn"}, "sandbox\nsandbox\n", 0},
		{"write workspace", []string{"/bin/sh", "-c", "echo hi > f && cat f"}, "hi\n", 0},
		{"no caps", []string{"/bin/sh", "-c", "grep CapEff /proc/self/status"}, "CapEff:\t0000000000000000\n", 0},
		{"no new privs + seccomp", []string{"/bin/sh", "-c", "grep -E 'NoNewPrivs|Seccomp:' /proc/self/status"}, "NoNewPrivs:\t1\nSeccomp:\t2\n", 0},
		{"unshare denied", []string{"/usr/bin/unshare", "-U", "true"}, "", 1},
		{"exit code", []string{"/bin/sh", "-c", "exit 7"}, "", 7},
		{"landlock signal scope", []string{"/bin/sh", "-c", "kill -0 1 2>/dev/null && echo reached-init || echo scoped"}, "scoped\n", 0},
		{"no PWD", []string{"/usr/bin/python3", "-c", "import os; print('PWD' in os.environ)"}, "False\n", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex, out, errs, _ := runNS(t, n, dir, sandbox.Limits{MemoryBytes: 128 << 20, Pids: 32}, c.argv...)
			if ex.Code != c.code || out != c.want {
				t.Fatalf("exit %+v stdout %q stderr %q; want code %d stdout %q", ex, out, errs, c.code, c.want)
			}
		})
	}
}

func TestNamespaceSignalExit(t *testing.T) {
	n := newTestNamespace(t)
	ex, _, errs, _ := runNS(t, n, t.TempDir(), sandbox.Limits{}, "/bin/sh", "-c", "kill -9 $$")
	if ex.Signal != 9 || ex.Code != -1 || ex.OOMKilled {
		t.Fatalf("got %+v %s", ex, errs)
	}
}

func TestNamespaceOOM(t *testing.T) {
	n := newTestNamespace(t)
	ex, _, errs, _ := runNS(t, n, t.TempDir(), sandbox.Limits{MemoryBytes: 64 << 20, Pids: 16},
		"/usr/bin/python3", "-c", "a=[]\nwhile True: a.append(bytearray(8<<20))")
	if !ex.OOMKilled || ex.MemoryPeakBytes < 32<<20 {
		t.Fatalf("want OOM kill: %+v %s", ex, strings.TrimSpace(errs))
	}
}

func TestNamespaceTiming(t *testing.T) {
	if testing.Short() {
		t.Skip("timing probe")
	}
	n := newTestNamespace(t)
	dir := t.TempDir()
	for i := 0; i < 5; i++ {
		runNS(t, n, dir, sandbox.Limits{MemoryBytes: 128 << 20, Pids: 32}, "/usr/bin/python3", "-c", "print(1)")
	}
}

// TestNamespaceStreamingStdin drives a long-lived interpreter over stdin and
// stdout, as sessions do.
func TestNamespaceStreamingStdin(t *testing.T) {
	n := newTestNamespace(t)
	dir := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p, err := n.Start(context.Background(), sandbox.Spec{ID: "repl", Argv: []string{"/usr/bin/python3", "-u", "-c",
		"import sys\nfor line in sys.stdin:\n    print(eval(line), flush=True)"}, Dir: dir,
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + dir}, Stdin: inR, Stdout: outW, Limits: sandbox.Limits{MemoryBytes: 128 << 20, Pids: 16}})
	if err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(outR)
	for i, expr := range []string{"1+1", "6*7", "len('abc')"} {
		if _, err := io.WriteString(inW, expr+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := rd.ReadString('\n')
		if want := []string{"2\n", "42\n", "3\n"}[i]; err != nil || line != want {
			t.Fatalf("%s: got %q %v, want %q", expr, line, err, want)
		}
	}
	_ = inW.Close()
	go func() { _, _ = io.Copy(io.Discard, rd) }()
	if ex, err := p.Wait(); err != nil || ex.Code != 0 {
		t.Fatalf("exit %+v %v", ex, err)
	}
	_ = p.Release(time.Second)
	_ = outW.Close()
}

// TestNamespaceKillOnEntry: one SIGKILL sent the moment Start returns, while
// the run may still be on its way into its (then empty) cgroup, ends it.
// Both paths: a cold helper and a pooled launcher.
func TestNamespaceKillOnEntry(t *testing.T) {
	n := newTestNamespace(t)
	lim := sandbox.Limits{MemoryBytes: 128 << 20, Pids: 32}
	for i := 0; i < 6; i++ {
		p, err := n.Start(context.Background(), sandbox.Spec{ID: "t", Argv: []string{"/bin/sleep", "60"}, Dir: t.TempDir(),
			Env: []string{"PATH=/usr/bin:/bin"}, Stdout: io.Discard, Stderr: io.Discard, Limits: lim})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		done := make(chan sandbox.Exit, 1)
		go func() { ex, _ := p.Wait(); done <- ex }()
		select {
		case ex := <-done:
			if ex.Code == 0 {
				t.Fatalf("run %d: killed run exited cleanly: %+v", i, ex)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("run %d: a kill at entry left the run going", i)
		}
		_ = p.Release(time.Second)
	}
}
