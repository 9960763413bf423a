package cgroup

import (
	"os"
	"testing"
	"time"
)

// busyLoop spends ~100–300 ms of user CPU in the shell.
const busyLoop = `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done`

// TestUsageMeasuresCPU: a group reports the CPU time its processes spent,
// whichever hierarchy accounts it on this host (v2 cpu.stat, v1 cpuacct
// with cpu or in a hierarchy of its own), and a group the pool hands on
// starts again from zero.
func TestUsageMeasuresCPU(t *testing.T) {
	p := newPool(t, 1)
	l := Limits{Pids: 16}
	for _, tc := range []struct {
		name   string
		script string
		// min and max bound the user CPU the run reports.
		min, max time.Duration
	}{
		{"busy new group", busyLoop, 30 * time.Millisecond, 10 * time.Second},
		{"idle reused group", "true", 0, 30 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := p.New("test-usage", l)
			if err != nil {
				t.Fatal(err)
			}
			runIn(t, g, tc.script)
			u := g.Usage()
			if err := g.Destroy(); err != nil {
				t.Fatal(err)
			}
			if !u.CPUKnown {
				t.Fatalf("Usage() = %+v: CPU not measured (controllers %v)", u, Detect().Controllers)
			}
			if u.CPUUser < tc.min || u.CPUUser > tc.max {
				t.Errorf("user CPU %v, want within [%v, %v] (system %v)", u.CPUUser, tc.min, tc.max, u.CPUSystem)
			}
		})
	}
	if p.Kept() != 1 {
		t.Errorf("pool kept %d groups, want the reused one", p.Kept())
	}
}

// TestGroupWithoutAcctDirectory: where the cpuacct hierarchy is apart from
// cpu but no group can be made in it, a group is still made, its runs go
// on, and their CPU time is unmeasured rather than a zero.
func TestGroupWithoutAcctDirectory(t *testing.T) {
	info := Detect()
	if !info.Usable() || info.Version != 1 || !contains(info.Controllers, acctController) || os.Geteuid() != 0 {
		t.Skipf("needs root on cgroup v1 with cpuacct apart from cpu (%s)", info)
	}
	info.bases = append(parents(info)[:len(v1Controllers):len(v1Controllers)], "/proc/codexec-no-such-hierarchy")
	g, err := New(info, "test-no-acct", Limits{Pids: 8})
	if err != nil {
		t.Fatalf("New without a cpuacct group: %v", err)
	}
	runIn(t, g, busyLoop)
	u := g.Usage()
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	if len(g.dirs) != len(v1Controllers) || u.CPUKnown {
		t.Errorf("dirs %v, usage %+v: want the four controllers' groups and CPU unmeasured", g.dirs, u)
	}
}
