package cgroup

import (
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
