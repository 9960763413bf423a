package e2e

import (
	"strings"
	"testing"
)

// cgroupProbe prints the run's memory cgroup and exits with status 3, so
// that the server asks the group whether the OOM killer struck.
const cgroupProbe = "import sys\nprint([l for l in open('/proc/self/cgroup').read().split() if ':memory:' in l][0])\nsys.exit(3)"

// TestReusedCgroupCounters: forked runs reuse the emptied cgroups of
// finished ones; a run that hit the memory limit leaves nothing in what a
// later run in the same group is told: no OOM kill, no peak memory. The
// probes run until one is placed in the first run's group (proof that
// groups are reused), each exiting non-zero so the OOM check is made.
func TestReusedCgroupCounters(t *testing.T) {
	skipWithout(t, byCgroup, "reusing cgroups and their OOM and peak counters")
	if why := modeAvailable(t, "namespace"); why != "" {
		t.Skipf("namespace mode unavailable here: %s", why)
	}
	s := start(t, "CODEXEC_SANDBOX_MODE=namespace", "CODEXEC_POOL_SIZE=2", "CODEXEC_MEMORY_LIMIT=128m")
	s.awaitWarm("python")
	code := cgroupProbe[:strings.Index(cgroupProbe, "sys.exit")] + "sys.stdout.flush()\na=[]\nwhile True:\n    a.append(bytearray(8<<20))"
	first, _ := s.exec(map[string]any{"language": "python", "code": code})
	group := strings.TrimSpace(first.Stdout)
	if !strings.Contains(deref(first.ErrorMessage), "memory limit 128 MiB exceeded") || group == "" {
		t.Fatalf("first run: want an OOM kill and its group, got %s %q %q", first.Status, deref(first.ErrorMessage), first.Stdout)
	}
	if !strings.Contains(s.Stderr.String(), "python fork-server started") {
		t.Skip("runs are not forked here: groups are not reused")
	}
	for i := range 12 {
		s.awaitWarm("python")
		r, _ := s.exec(map[string]any{"language": "python", "code": cgroupProbe})
		if r.ExitCode == nil || *r.ExitCode != 3 || r.ErrorMessage != nil && strings.Contains(*r.ErrorMessage, "memory") {
			t.Fatalf("probe %d: %s exit %v %q", i, r.Status, r.ExitCode, deref(r.ErrorMessage))
		}
		var log struct {
			MemoryPeakMB *float64 `json:"memory_peak_mb"`
		}
		s.callInto("get_execution_log", map[string]any{"execution_id": r.ExecutionID}, &log)
		if log.MemoryPeakMB != nil && *log.MemoryPeakMB >= 64 {
			t.Fatalf("probe %d: memory peak %.1f MiB includes an earlier run's", i, *log.MemoryPeakMB)
		}
		if strings.TrimSpace(r.Stdout) == group {
			t.Logf("probe %d ran in the first run's group %s", i, group)
			return
		}
	}
	t.Fatalf("no probe ran in the first run's group %s: groups are not reused", group)
}
