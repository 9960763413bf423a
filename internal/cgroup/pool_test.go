package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// newPool is a Pool of this host's groups that keeps up to max, or skips
// where groups are not pooled (cgroup v2) or not usable.
func newPool(t *testing.T, max int) *Pool {
	t.Helper()
	info := Detect()
	if !info.Usable() || os.Geteuid() != 0 {
		t.Skipf("cgroups not usable here (%s, euid %d)", info, os.Geteuid())
	}
	if info.Version != 1 {
		t.Skip("groups are pooled on cgroup v1 only")
	}
	p := NewPool(info, max)
	t.Cleanup(p.Close)
	return p
}

// runIn runs a shell command as a process of g and waits for it.
func runIn(t *testing.T, g *Group, script string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "read x; "+script)
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	place(t, g, cmd.Process.Pid)
	_, _ = in.Write([]byte("go\n"))
	_ = cmd.Wait()
}

// TestPoolKeepsResetGroups: a destroyed group of a pool is kept and handed
// to the next New with the same limits, with nothing of its last run left
// in what runs are told (peak memory, OOM kill); the value the last run
// held is inert, so its late kill or Destroy reaches neither the next
// run's processes nor the directories.
func TestPoolKeepsResetGroups(t *testing.T) {
	p := newPool(t, 2)
	l := Limits{MemoryBytes: 48 << 20, Pids: 16}
	g1, err := p.New("test-pool-a", l)
	if err != nil {
		t.Fatal(err)
	}
	// 64 MiB through a pipe buffer's worth at a time would not be charged:
	// hold it in the shell's memory instead, past the limit.
	runIn(t, g1, `x=$(head -c 67108864 /dev/zero | tr '\0' a); echo ${#x}`)
	if !g1.OOMKilled() || g1.MemoryPeak() < 32<<20 {
		t.Fatalf("first run: OOM killed %v, peak %d; want an OOM kill near the limit", g1.OOMKilled(), g1.MemoryPeak())
	}
	dir := filepath.Dir(g1.ProcsFiles()[0])
	if err := g1.Destroy(); err != nil || p.Kept() != 1 {
		t.Fatalf("Destroy: %v, kept %d; want the group kept", err, p.Kept())
	}
	g2, err := p.New("test-pool-b", l)
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Destroy()
	if got := filepath.Dir(g2.ProcsFiles()[0]); got != dir {
		t.Fatalf("New made %s, want the kept %s", got, dir)
	}
	if g2.OOMKilled() || g2.MemoryPeak() > keepBelow {
		t.Errorf("reused group: OOM killed %v, peak %d; want neither from the last run", g2.OOMKilled(), g2.MemoryPeak())
	}
	sleeper := exec.Command("/bin/sh", "-c", "read x; exec sleep 30")
	in, _ := sleeper.StdinPipe()
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	place(t, g2, sleeper.Process.Pid)
	_, _ = in.Write([]byte("go\n"))
	_ = g1.Kill()
	g1.Signal(syscall.SIGKILL)
	if err := g1.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := sleeper.Process.Signal(syscall.Signal(0)); err != nil || len(g2.Pids()) != 1 {
		t.Fatalf("the last run's late kill reached the next run: %v, pids %v", err, g2.Pids())
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the last run's late Destroy removed the group: %v", err)
	}
}

// TestPoolLimitsAndBounds: a group is reused only for the same limits; a
// full pool removes what it cannot keep, and Close removes what it kept.
func TestPoolLimitsAndBounds(t *testing.T) {
	p := newPool(t, 1)
	var dirs []string
	for i, l := range []Limits{{Pids: 8}, {Pids: 9}} {
		g, err := p.New("test-pool-l"+strconv.Itoa(i), l)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, filepath.Dir(g.ProcsFiles()[0]))
		defer g.Destroy() // the second is removed: the pool holds one
	}
	g, err := p.New("test-pool-l2", Limits{Pids: 7})
	if err != nil {
		t.Fatal(err)
	}
	if d := filepath.Dir(g.ProcsFiles()[0]); d == dirs[0] || d == dirs[1] {
		t.Fatalf("a group with other limits was reused: %s", d)
	}
	if err := g.Destroy(); err != nil || p.Kept() != 1 {
		t.Fatalf("Destroy: %v, kept %d", err, p.Kept())
	}
	p.Close()
	if _, err := os.Stat(filepath.Dir(g.ProcsFiles()[0])); !os.IsNotExist(err) {
		t.Fatalf("Close left a kept group: %v", err)
	}
}

// TestPoolRemovesGroupsHoldingCache: a group still charged with more than
// a little memory (page cache of a file its run wrote) is removed rather
// than kept, so the pages stay cached for whoever reads them next.
func TestPoolRemovesGroupsHoldingCache(t *testing.T) {
	p := newPool(t, 2)
	g, err := p.New("test-pool-cache", Limits{MemoryBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "cached")
	runIn(t, g, "head -c 8388608 /dev/zero > "+file)
	if g.MemoryCurrent() <= keepBelow {
		t.Skipf("the file's pages are not charged to the group (%d bytes)", g.MemoryCurrent())
	}
	if err := g.Destroy(); err != nil || p.Kept() != 0 {
		t.Fatalf("Destroy: %v, kept %d; want the group removed", err, p.Kept())
	}
	if _, err := os.Stat(filepath.Dir(g.ProcsFiles()[0])); !os.IsNotExist(err) {
		t.Fatalf("the group is still there: %v", err)
	}
}
