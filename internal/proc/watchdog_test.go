package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/instance"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

// TestMain lets the test binary act as the helper (the watchdog).
func TestMain(m *testing.M) {
	if code, ok := helper.Dispatch(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// sleeper starts `sleep 300` in a process group of its own (and a session
// of its own with setsid), with env added; it is killed and reaped at
// cleanup.
func sleeper(t *testing.T, setsid bool, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !setsid, Setsid: setsid}
	wait, err := StartTracked(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = wait() })
	return cmd
}

// TestWatchdogKillsWhenServerEnds: once the server's end of the pipe is
// gone (StopWatchdog, as a kill -9 of the server would), the watchdog
// kills the guarded groups and the processes carrying the server's run
// marker, and spares groups no longer guarded and other servers' runs;
// a watchdog killed meanwhile is replaced, registrations and all.
func TestWatchdogKillsWhenServerEnds(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run("restart="+strconv.FormatBool(restart), func(t *testing.T) {
			guarded := sleeper(t, false)
			marked := sleeper(t, true, NewRunMarker("watchdog-test"))
			unguarded := sleeper(t, false)
			other := sleeper(t, true, RunMarkerKey+"=1-2-other/run-1")
			GuardGroup(guarded.Process.Pid)
			GuardGroup(unguarded.Process.Pid)
			UnguardGroup(unguarded.Process.Pid)
			if err := StartWatchdog(); err != nil {
				t.Fatal(err)
			}
			if restart {
				first := watchdogPid(t)
				_ = syscall.Kill(first, syscall.SIGKILL)
				waitUntil(t, "another watchdog", func() bool { p := findWatchdog(); return p != 0 && p != first })
			}
			StopWatchdog()
			waitUntil(t, "the guarded group and the marked process to die", func() bool {
				return !alive(guarded.Process.Pid) && !alive(marked.Process.Pid)
			})
			waitUntil(t, "the watchdog to exit", func() bool { return findWatchdog() == 0 })
			if !alive(unguarded.Process.Pid) || !alive(other.Process.Pid) {
				t.Errorf("the watchdog killed what it was not given: unguarded alive %v, other server's run alive %v",
					alive(unguarded.Process.Pid), alive(other.Process.Pid))
			}
			UnguardGroup(guarded.Process.Pid)
		})
	}
	if !strings.HasPrefix(NewRunMarker("x"), RunMarkerKey+"="+instance.Self()+"/") {
		t.Fatal("the watchdog's marker prefix is not the one run markers start with")
	}
}

// findWatchdog returns the pid of this process's watchdog child, or 0.
func findWatchdog() int {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, c := range strings.Fields(string(b)) {
			cmd, _ := os.ReadFile("/proc/" + c + "/cmdline")
			pid, _ := strconv.Atoi(c)
			if strings.Contains(string(cmd), helper.WatchdogCommand) && alive(pid) {
				return pid
			}
		}
	}
	return 0
}

func watchdogPid(t *testing.T) int {
	t.Helper()
	var pid int
	waitUntil(t, "the watchdog", func() bool { pid = findWatchdog(); return pid != 0 })
	return pid
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkGuardGroup times what the watchdog adds to a run outside any
// sandbox: registering its process group and removing it again, with the
// watchdog running (two writes on its pipe).
//
//	go test ./internal/proc/ -run '^$' -bench GuardGroup
func BenchmarkGuardGroup(b *testing.B) {
	if err := StartWatchdog(); err != nil {
		b.Fatal(err)
	}
	defer StopWatchdog()
	pg := 1 << 30 // no such group: the watchdog must not kill anything real
	for b.Loop() {
		GuardGroup(pg)
		UnguardGroup(pg)
	}
}
