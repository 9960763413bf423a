package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var groupSeq atomic.Int64

func newGroup(t *testing.T, l Limits) *Group {
	t.Helper()
	info := Detect()
	if !info.Usable() || os.Geteuid() != 0 {
		t.Skipf("cgroups not usable here (%s, euid %d)", info, os.Geteuid())
	}
	g, err := New(info, "test-"+t.Name()+"-"+strconv.FormatInt(groupSeq.Add(1), 10), l)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func place(t *testing.T, g *Group, pid int) {
	t.Helper()
	for _, f := range g.ProcsFiles() {
		if err := os.WriteFile(f, []byte(strconv.Itoa(pid)), 0); err != nil {
			t.Fatal(err)
		}
	}
}

func TestKillReachesEscapedDescendants(t *testing.T) {
	g := newGroup(t, Limits{MemoryBytes: 64 << 20, Pids: 16, CPUs: 0.5})
	// The shell waits on a pipe until placed, then starts a setsid daemon.
	cmd := exec.Command("/bin/sh", "-c", "read x; setsid sleep 300 & sleep 300")
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	place(t, g, cmd.Process.Pid)
	_, _ = in.Write([]byte("go\n"))
	deadline := time.Now().Add(5 * time.Second)
	for len(g.Pids()) < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(g.Pids()); n < 3 {
		t.Fatalf("want 3 processes in the group, got %d", n)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(g.ProcsFiles()[0])); !os.IsNotExist(err) {
		t.Fatalf("group directory still exists: %v", err)
	}
}

func TestPidsLimit(t *testing.T) {
	g := newGroup(t, Limits{Pids: 4})
	defer g.Destroy()
	cmd := exec.Command("/bin/sh", "-c", "read x; for i in 1 2 3 4 5 6 7 8; do sleep 5 & done; wait")
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	place(t, g, cmd.Process.Pid)
	_, _ = in.Write([]byte("go\n"))
	time.Sleep(300 * time.Millisecond)
	if n := len(g.Pids()); n > 4 {
		t.Fatalf("pids limit 4 exceeded: %d", n)
	}
	_ = g.Kill()
	_ = cmd.Wait()
}

// TestDestroyWithoutDirs: a group New gave up on before its first
// directory existed (a read-only cgroup file system, as in a container
// without the rights) is destroyed without a panic.
func TestDestroyWithoutDirs(t *testing.T) {
	g := &Group{}
	if pids := g.Pids(); pids != nil {
		t.Errorf("Pids() = %v, want none", pids)
	}
	if err := g.Destroy(); err != nil {
		t.Errorf("Destroy: %v", err)
	}
}

// A process that enters the group after a complete kill (placed late) is
// killed by Drain too, once the grace for dying processes has passed.
func TestDrainKillsLatePlacedProcess(t *testing.T) {
	g := newGroup(t, Limits{})
	defer g.Destroy()
	first := exec.Command("/bin/sleep", "300")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	place(t, g, first.Process.Pid)
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	late := exec.Command("/bin/sleep", "300")
	if err := late.Start(); err != nil {
		t.Fatal(err)
	}
	defer late.Process.Kill()
	place(t, g, late.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- late.Wait() }()
	start := time.Now()
	g.Drain()
	if n := len(g.Pids()); n != 0 {
		t.Fatalf("%d processes left after Drain (%v)", n, time.Since(start))
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the late process was not killed")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Drain took %v", d)
	}
}

// Limits land in the control files, and a destroyed group's accessors
// touch nothing (its directory descriptors are closed).
func TestLimitsAndAccessAfterDestroy(t *testing.T) {
	g := newGroup(t, Limits{MemoryBytes: 64 << 20, Pids: 7, CPUs: 0.5})
	dirs := append([]string(nil), g.dirs...)
	want := map[string]string{"memory.max": "67108864", "pids.max": "7", "cpu.max": "50000 100000"}
	if !g.v2 {
		want = map[string]string{"memory/memory.limit_in_bytes": "67108864", "pids/pids.max": "7", "cpu/cpu.cfs_quota_us": "50000"}
	}
	for f, v := range want {
		dir, file := dirs[0], f
		if !g.v2 {
			c, name, _ := strings.Cut(f, "/")
			dir, file = dirs[indexOf(v1Controllers, c)], name
		}
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || strings.TrimSpace(string(b)) != v {
			t.Errorf("%s = %q (%v), want %q", f, b, err, v)
		}
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	if g.Pids() != nil || g.MemoryPeak() != 0 || g.Kill() != nil {
		t.Error("a destroyed group still reads its files")
	}
	if err := g.SetCPUWeight(1024); err == nil {
		t.Error("SetCPUWeight on a destroyed group succeeded")
	}
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
