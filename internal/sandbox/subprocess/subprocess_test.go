package subprocess

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

// TestMain lets the test binary act as the helper (sandbox-fsize).
func TestMain(m *testing.M) { sandboxtest.Main(m) }

func runSub(t *testing.T, script string, stdin string) (sandbox.Exit, string, string) {
	t.Helper()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	spec := sandbox.Spec{ID: "t", Argv: []string{"/bin/bash", "-c", script}, Dir: dir, Env: []string{"HOME=" + dir, "PATH=/usr/bin:/bin"},
		Stdout: &out, Stderr: &errb}
	if stdin != "" {
		spec.Stdin = strings.NewReader(stdin)
	}
	p, err := New(sandbox.PoolOptions{}).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(time.Second); err != nil {
		t.Fatal(err)
	}
	return ex, out.String(), errb.String()
}

func TestSubprocessExits(t *testing.T) {
	cases := []struct {
		name, script, stdin, out, errOut string
		exit                             sandbox.Exit
	}{
		{"ok", "echo hi; echo err >&2", "", "hi\n", "err\n", sandbox.Exit{Code: 0}},
		{"code", "exit 7", "", "", "", sandbox.Exit{Code: 7}},
		{"signal", "kill -SEGV $$", "", "", "", sandbox.Exit{Code: -1, Signal: int(syscall.SIGSEGV)}},
		{"stdin", "cat", "line1\nline2", "line1\nline2", "", sandbox.Exit{Code: 0}},
		{"env", "echo $HOME-$SECRET", "", "", "", sandbox.Exit{Code: 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex, out, errOut := runSub(t, c.script, c.stdin)
			if ex.Code != c.exit.Code || ex.Signal != c.exit.Signal {
				t.Errorf("exit %+v, want %+v", ex, c.exit)
			}
			if c.name == "env" {
				if !strings.HasSuffix(out, "-\n") {
					t.Errorf("environment leaked: %q", out)
				}
				return
			}
			if out != c.out || errOut != c.errOut {
				t.Errorf("out %q err %q", out, errOut)
			}
		})
	}
}

// TestSubprocessReleaseKillsEscapees: a setsid double-forked daemon holding
// stdout open must neither block Release nor survive it.
func TestSubprocessReleaseKillsEscapees(t *testing.T) {
	pidFile := t.TempDir() + "/pid"
	start := time.Now()
	ex, out, _ := runSub(t, "setsid bash -c 'sleep 1000 & echo $! > "+pidFile+"; wait' & sleep 0.2; echo main-done", "")
	if ex.Code != 0 || out != "main-done\n" {
		t.Fatalf("exit %+v out %q", ex, out)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("release blocked on the daemon's open pipe")
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	// Release sends SIGKILL; on a loaded host the killed daemon can still
	// be tearing down (state R) for a moment. It must be gone or a zombie
	// soon after, never still running.
	deadline := time.Now().Add(2 * time.Second)
	for {
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || strings.Contains(string(st), ") Z") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon %s survived: %s", pid, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSubprocessFileSizeLimit: sandbox.Limits.DiskBytes caps one file's size
// (RLIMIT_FSIZE) for the program and what it starts.
func TestSubprocessFileSizeLimit(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	spec := sandbox.Spec{ID: "t", Dir: dir, Env: []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}, Stdout: &out, Stderr: &errb,
		Argv:   []string{"/bin/bash", "-c", "head -c 3000000 /dev/zero > f; echo status=$?; stat -c size=%s f"},
		Limits: sandbox.Limits{DiskBytes: 1 << 20}}
	p, err := New(sandbox.PoolOptions{}).Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	_ = p.Release(time.Second)
	want := "status=153\nsize=1048576\n" // 128 + SIGXFSZ
	if out.String() != want {
		t.Fatalf("got %q (stderr %q), want %q", out.String(), errb.String(), want)
	}
}

// TestSubprocessEnforced: subprocess mode claims the file size cap (the
// test above proves it holds) and nothing else, whatever limits are set.
func TestSubprocessEnforced(t *testing.T) {
	cases := []struct {
		limits sandbox.Limits
		want   sandbox.Enforcement
	}{
		{sandbox.Limits{MemoryBytes: 512 << 20, CPUs: 1, Pids: 64, DiskBytes: 256 << 20},
			sandbox.Enforcement{Memory: "none", Pids: "none", CPU: "none", Disk: "rlimit file size 256 MiB"}},
		{sandbox.Limits{MemoryBytes: 512 << 20}, sandbox.Unenforced},
	}
	for _, c := range cases {
		got, ok := sandbox.EnforcedBy(New(sandbox.PoolOptions{}), sandbox.Spec{Limits: c.limits})
		if !ok || got != c.want {
			t.Errorf("limits %+v: Enforced = %+v, %t; want %+v", c.limits, got, ok, c.want)
		}
	}
}

// TestSubprocessWarm checks that runs served by subprocess warm runners
// keep the semantics of cold ones (sandboxtest.WarmSemantics).
func TestSubprocessWarm(t *testing.T) {
	for _, kind := range []string{sandbox.WarmPython, sandbox.WarmNode, sandbox.WarmBash} {
		t.Run(kind, func(t *testing.T) {
			if _, err := os.Stat(sandboxtest.WarmSpec(kind, "", "").Argv[0]); err != nil {
				t.Skipf("no %s interpreter: %v", kind, err)
			}
			s := New(sandbox.PoolOptions{Size: 1})
			t.Cleanup(func() { _ = s.Close() })
			dir := t.TempDir()
			sandboxtest.WarmSemantics(t, s, kind, dir, dir, os.Getuid())
		})
	}
}

// TestSubprocessWarmBashMatchesCold runs bash programs warm (exec runners)
// and cold and expects the same result.
func TestSubprocessWarmBashMatchesCold(t *testing.T) {
	warm := New(sandbox.PoolOptions{Size: 1})
	t.Cleanup(func() { _ = warm.Close() })
	cold := New(sandbox.PoolOptions{})
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/in.txt", []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range sandboxtest.BashCases {
		t.Run(c.Name, func(t *testing.T) {
			spec := sandboxtest.WarmSpec(sandbox.WarmBash, dir, c.Code, "a1")
			sandboxtest.WaitReady(t, warm, spec)
			hits := sandboxtest.KindHits(warm, sandbox.WarmBash)
			spec.Stdin = strings.NewReader("stdin-data")
			w := sandboxtest.Run(t, warm, spec)
			if sandboxtest.KindHits(warm, sandbox.WarmBash) != hits+1 {
				t.Fatalf("run was not served warm: %+v", warm.PoolStats())
			}
			spec.Stdin = strings.NewReader("stdin-data")
			spec.Warm = ""
			cr := sandboxtest.Run(t, cold, spec)
			if c.Name == "descriptors" {
				// A cold run also holds what the server inherited without
				// close-on-exec (nothing here isolates); the exec runner's
				// stub closes all but stdio.
				cr.Stdout = stdioOnly(cr.Stdout)
			}
			if w.Exit.Usage.Path != proc.PathWarm || cr.Exit.Usage.Path != proc.PathCold {
				t.Errorf("sandbox paths %q and %q, want warm and cold", w.Exit.Usage.Path, cr.Exit.Usage.Path)
			}
			// What each used differs by design (a cold run's rusage, the path).
			w.Exit.Usage, cr.Exit.Usage = proc.Usage{}, proc.Usage{}
			if w != cr {
				t.Fatalf("warm %+v\ncold %+v", w, cr)
			}
		})
	}
}

// stdioOnly keeps the lines of a descriptor listing about 0, 1 and 2.
func stdioOnly(listing string) string {
	var out []string
	for _, l := range strings.SplitAfter(listing, "\n") {
		if fd, _, _ := strings.Cut(l, " "); fd == "0" || fd == "1" || fd == "2" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// TestSubprocessReleaseSparesOtherRuns: two runs in one working directory
// share HOME; the end of one must not kill the orphaned daemon of the
// other, and the end of the other must.
func TestSubprocessReleaseSparesOtherRuns(t *testing.T) {
	dir, pidFile := t.TempDir(), t.TempDir()+"/pid"
	s := New(sandbox.PoolOptions{})
	start := func(script string) sandbox.Process {
		spec := sandbox.Spec{ID: "t", Argv: []string{"/bin/bash", "-c", script}, Dir: dir,
			Env: []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
		p, err := s.Start(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The subshell exits at once: its daemon is an orphan (the server's
	// child, as its subreaper) while the run goes on.
	long := start("(setsid bash -c 'sleep 300 & echo $! > " + pidFile + "; wait' &); sleep 300")
	released := false
	t.Cleanup(func() {
		if !released {
			_ = long.Kill()
			_ = long.Release(time.Second)
		}
	})
	var daemon int
	waitUntil(t, 10*time.Second, func() bool {
		b, err := os.ReadFile(pidFile)
		daemon, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && daemon > 0
	})
	short := start("setsid sleep 300 & sleep 0.2")
	_, _ = short.Wait()
	_ = short.Release(time.Second)
	if !sandboxtest.Alive(daemon) {
		t.Fatalf("the end of one run killed the daemon of another run in the same directory")
	}
	_ = long.Kill()
	_, _ = long.Wait()
	_ = long.Release(time.Second)
	released = true
	// SIGKILL is delivered at once but the process dies on its next
	// schedule; a daemon mid-exit has no environment left to match, so the
	// sweep counts it done while /proc may still show it running briefly.
	deadline := time.Now().Add(5 * time.Second)
	for sandboxtest.Alive(daemon) {
		if time.Now().After(deadline) {
			t.Fatalf("daemon %d survived the kill of its own run", daemon)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitUntil(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
