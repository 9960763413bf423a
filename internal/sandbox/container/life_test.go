//go:build linux

package container

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/instance"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
	"github.com/codexec/codexec/internal/sandbox/warm"
)

// TestContainerDeadline checks that a container run ends by itself at its
// deadline, cold and warm, without the server stopping it.
func TestContainerDeadline(t *testing.T) {
	for _, tc := range []struct {
		name, kind string
		extra      []string
	}{
		{"cold", "", nil},
		{"warm python", sandbox.WarmPython, nil},
		{"warm node", sandbox.WarmNode, []string{"node"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := sandbox.PoolOptions{}
			if tc.kind != "" {
				pool.Size = 1
			}
			c := newTestContainer(t, pool, tc.extra...)
			kind := tc.kind
			code := "import time; time.sleep(60)"
			if kind == sandbox.WarmNode {
				code = "setTimeout(() => {}, 60000)"
			}
			if kind != "" {
				c.Prewarm(sandboxtest.WarmSpec(kind, t.TempDir(), ""))
				if _, ok := c.AwaitWarm(kind, 20*time.Second); !ok {
					t.Fatal("no warm runner became ready")
				}
			}
			spec := sandboxtest.WarmSpec(kind, t.TempDir(), code)
			spec.Deadline = 2 * time.Second
			hits := sandboxtest.PoolHits(c)
			t0 := time.Now()
			got := sandboxtest.Run(t, c, spec)
			took := time.Since(t0)
			t.Logf("ended after %v: %+v", took.Round(time.Millisecond), got.Exit)
			if got.Exit.Signal != 9 || got.Exit.OOMKilled || took > 30*time.Second {
				t.Errorf("run with a 2 s deadline: %+v after %v, want killed (signal 9) at the deadline", got.Exit, took)
			}
			if kind != "" && sandboxtest.PoolHits(c) != hits+1 {
				t.Errorf("the run was not served warm")
			}
		})
	}
}

// TestContainerWarmEndsWithServer checks that a ready warm container ends
// once the server's end of its deadline FIFO closes, as it does when the
// server dies.
func TestContainerWarmEndsWithServer(t *testing.T) {
	c := newTestContainer(t, sandbox.PoolOptions{Size: 1})
	c.Prewarm(sandboxtest.WarmSpec(sandbox.WarmPython, t.TempDir(), ""))
	if _, ok := c.AwaitWarm(sandbox.WarmPython, 20*time.Second); !ok {
		t.Fatal("no warm runner became ready")
	}
	taken := c.runners.Pool.Take(mustWarmRequest(t, sandboxtest.WarmSpec(sandbox.WarmPython, t.TempDir(), "")))
	if taken == nil {
		t.Fatal("no ready runner to take")
	}
	r := taken.(*ctRunner)
	defer r.free()
	_ = r.deadline.Close()
	r.deadline = nil
	exited := make(chan error, 1)
	go func() { exited <- r.Wait() }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the warm container still runs 10 s after its deadline FIFO lost its writer")
	}
	if out, _ := exec.Command(c.cli, "ps", "-q", "--filter", "name="+r.name).Output(); strings.TrimSpace(string(out)) != "" {
		t.Errorf("container %s still listed as running", r.name)
	}
}

func mustWarmRequest(t *testing.T, spec sandbox.Spec) warm.Request {
	t.Helper()
	req, ok := warm.Parse(spec)
	if !ok {
		t.Fatal("spec cannot run warm")
	}
	return req
}

// TestContainerSweep checks that a starting backend removes the managed
// containers of dead servers and nothing else.
func TestContainerSweep(t *testing.T) {
	c := newTestContainer(t, sandbox.PoolOptions{})
	gone := exec.Command("true")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	deadName := instance.Of(gone.Process.Pid)
	_ = gone.Wait()
	if !instance.Dead(deadName) {
		t.Fatalf("%s is not dead", deadName)
	}
	prefix := "codexec-sweeptest-" + strings.ReplaceAll(instance.Self(), "-", "") + "-"
	containers := []struct {
		name   string
		labels []string
		kept   bool
		cmd    string
	}{
		{"dead", []string{labelManaged + "=true", labelInstance + "=" + deadName}, false, "sleep"},
		// Exited: podman's kill of several containers stops at one that
		// is not running, which must not spare the others.
		{"dead-exited", []string{labelManaged + "=true", labelInstance + "=" + deadName}, false, "echo"},
		{"sandboxtest.Alive", []string{labelManaged + "=true", labelInstance + "=" + instance.Self()}, true, "sleep"},
		{"malformed", []string{labelManaged + "=true", labelInstance + "=nonsense"}, true, "sleep"},
		{"unmanaged", []string{labelInstance + "=" + deadName}, true, "sleep"},
	}
	want := map[string]bool{}
	for _, ct := range containers {
		args := []string{"run", "-d", "--name", prefix + ct.name, "--network", "none"}
		for _, l := range ct.labels {
			args = append(args, "--label", l)
		}
		args = append(args, c.opts.Image, ct.cmd)
		if ct.cmd == "sleep" {
			args = append(args, "300")
		}
		if out, err := exec.Command(c.cli, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v %s", c.cli, args, err, out)
		}
		t.Cleanup(func() {
			_ = exec.Command(c.cli, "kill", "--signal", "KILL", prefix+ct.name).Run()
			_ = exec.Command(c.cli, "rm", "-f", prefix+ct.name).Run()
		})
		want[prefix+ct.name] = ct.kept
	}
	if _, err := New(context.Background(), c.opts); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for name := range want {
		got[name] = exec.Command(c.cli, "inspect", "--format", "{{.Id}}", name).Run() == nil
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("containers kept after the sweep (-want +got):\n%s", d)
	}
}

// TestSweepWarmRoots checks that the warm container directories of dead
// servers are removed, and those of live servers and unnamed ones kept.
func TestSweepWarmRoots(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	dead := instance.Of(gone.Process.Pid)
	_ = gone.Wait()
	want := map[string]bool{}
	for prefix, kept := range map[string]bool{
		warmRootPrefix + dead + "-":            false,
		warmRootPrefix + instance.Self() + "-": true,
		warmRootPrefix:                         true, // from before servers were named
		// An earlier version's name (no pid namespace): maybe a live
		// server of another pid namespace.
		warmRootPrefix + dead[:strings.LastIndexByte(dead, '-')] + "-": true,
	} {
		dir, err := os.MkdirTemp("", prefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		if err := os.Mkdir(filepath.Join(dir, "r-1"), 0o711); err != nil {
			t.Fatal(err)
		}
		want[dir] = kept
	}
	sweepWarmRoots()
	got := map[string]bool{}
	for dir := range want {
		_, err := os.Stat(dir)
		got[dir] = err == nil
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("warm roots kept (-want +got):\n%s", d)
	}
}
