package cgroup

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFreezerPinLivesWithGroups: on v1 the pin is frozen while a group
// exists and removed with the last one, so nothing is left behind.
func TestFreezerPinLivesWithGroups(t *testing.T) {
	a := newGroup(t, Limits{})
	if a.v2 {
		t.Skip("the pin is for the v1 freezer")
	}
	b := newGroup(t, Limits{Pids: 8})
	dir := pin.dir
	if dir == "" {
		t.Fatal("no freezer pin while groups exist")
	}
	if st, _ := os.ReadFile(dir + "/freezer.state"); strings.TrimSpace(string(st)) != "FROZEN" {
		t.Fatalf("pin state %q, want FROZEN", st)
	}
	if err := a.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("pin removed while a group remains: %v", err)
	}
	if err := b.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("pin left after the last group: %v", err)
	}
}

// BenchmarkKillV1 measures killing a v1 group that holds one process (freeze,
// SIGKILL, thaw) without the freezer pin (the baseline, measured first: a
// removed pin keeps the key on until the kernel retires the group) and with
// it, in one run.
//
//	go test ./internal/cgroup/ -run '^$' -bench KillV1 -benchtime 100x
func BenchmarkKillV1(b *testing.B) {
	info := Detect()
	if !info.Usable() || info.Version != 1 || os.Geteuid() != 0 {
		b.Skip("needs cgroup v1 and root")
	}
	var bare, pinned time.Duration
	const baseRuns = 50
	pin.off = true
	for i := 0; i < baseRuns; i++ {
		bare += killOnce(b, info)
	}
	pin.off = false
	hold, err := New(info, "bench-hold-"+strconv.Itoa(os.Getpid()), Limits{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = hold.Destroy() }()
	n := 0
	for b.Loop() {
		pinned += killOnce(b, info)
		n++
	}
	perPinned, perBare := pinned/time.Duration(n), bare/baseRuns
	b.ReportMetric(float64(perPinned.Microseconds())/1000, "pinned-ms/op")
	b.ReportMetric(float64(perBare.Microseconds())/1000, "unpinned-ms/op")
	b.ReportMetric(float64(perPinned)/float64(perBare), "ratio")
}

// killOnce times one Kill of a fresh group holding a sleep.
func killOnce(b *testing.B, info Info) time.Duration {
	g, err := New(info, "bench-kill-"+strconv.Itoa(os.Getpid()), Limits{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = g.Destroy() }()
	cmd := exec.Command("sleep", "100")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	for _, f := range g.ProcsFiles() {
		if err := os.WriteFile(f, []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
			b.Fatal(err)
		}
	}
	t0 := time.Now()
	err = g.Kill()
	d := time.Since(t0)
	_ = cmd.Wait()
	if err != nil {
		b.Fatal(err)
	}
	return d
}
