package proc

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/instance"
)

// alive reports whether pid runs (and is not a zombie).
func alive(pid int) bool {
	st, _ := State(pid)
	return st != 0 && st != 'Z'
}

// startDaemon starts, with env, a shell that setsid-forks a sleeping
// daemon, and returns both pids.
func startDaemon(t *testing.T, env []string) (shell, daemon int) {
	t.Helper()
	pidFile := t.TempDir() + "/pid"
	cmd := exec.Command("/bin/sh", "-c", "setsid sh -c 'sleep 300 & echo $! > "+pidFile+"; wait' & sleep 300")
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	wait, err := StartTracked(cmd)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			daemon, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			t.Cleanup(func() { _ = syscall.Kill(daemon, syscall.SIGKILL) })
			return cmd.Process.Pid, daemon
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the daemon did not start")
	return 0, 0
}

// TestSweepDeadRuns checks that the start-up sweep kills the processes of
// runs of dead servers, setsid daemons included, and spares the others.
func TestSweepDeadRuns(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	dead := instance.Of(gone.Process.Pid)
	_ = gone.Wait()
	env := func(marker string) []string {
		return []string{"PATH=/usr/bin:/bin", marker}
	}
	cases := []struct {
		name, marker string
		killed       bool
	}{
		{"dead server", RunMarkerKey + "=" + dead + "/exec_1-1", true},
		{"live server", RunMarkerKey + "=" + instance.Self() + "/exec_2-2", false},
		{"malformed name", RunMarkerKey + "=nonsense/exec_3-3", false},
		// The same pid and start time in another pid namespace (a server in
		// a container whose runs this one can see): not provably dead.
		{"server of another pid namespace", RunMarkerKey + "=" + otherPidNS(dead) + "/exec_5-5", false},
		{"server of an earlier version", RunMarkerKey + "=" + dead[:strings.LastIndexByte(dead, '-')] + "/exec_6-6", false},
		{"no marker", "OTHER=" + dead + "/exec_4-4", false},
	}
	pids := map[string][2]int{}
	for _, c := range cases {
		sh, d := startDaemon(t, env(c.marker))
		pids[c.name] = [2]int{sh, d}
	}
	// The count is not checked: any codexec starting on this host at the
	// same time (another test binary) sweeps the same dead run, and may win.
	// What must hold is who is alive afterwards.
	sweepDeadRuns()
	time.Sleep(100 * time.Millisecond)
	want, got := map[string][2]bool{}, map[string][2]bool{}
	for _, c := range cases {
		p := pids[c.name]
		want[c.name] = [2]bool{!c.killed, !c.killed}
		got[c.name] = [2]bool{alive(p[0]), alive(p[1])}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("shell and daemon alive after the sweep (-want +got):\n%s", d)
	}
}

// otherPidNS is name with another pid namespace.
func otherPidNS(name string) string {
	i := strings.LastIndexByte(name, '-')
	ns, _ := strconv.ParseUint(name[i+1:], 10, 64)
	return name[:i+1] + strconv.FormatUint(ns+1, 10)
}
