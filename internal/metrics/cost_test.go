package metrics

import (
	"strings"
	"testing"
	"time"
)

// TestRunCost: measured costs are summed and observed by their closed
// labels; what a run did not measure (no CPU, no memory) is not observed
// as a zero.
func TestRunCost(t *testing.T) {
	m := New()
	for _, c := range []Cost{
		{EndReason: "exit", Sandbox: "warm", MemoryPeakBytes: 10 << 20, WrittenBytes: 100},
		{EndReason: "oom", Sandbox: "cold", CPUKnown: true, CPUUser: 1500 * time.Millisecond, CPUSystem: 500 * time.Millisecond,
			MemoryPeakBytes: 128 << 20},
		{EndReason: "exit", Sandbox: "forked", NetworkBytes: 4096},
		{EndReason: "not_started"},
	} {
		m.RunCost(c)
	}
	m.RunCost(Cost{}) // nothing known: nothing counted but the network's 0
	out := scrape(t, m)
	for _, want := range []string{
		`codexec_executions_ended_total{end_reason="exit"} 2`,
		`codexec_executions_ended_total{end_reason="oom"} 1`,
		`codexec_executions_ended_total{end_reason="not_started"} 1`,
		`codexec_executions_by_sandbox_path_total{path="warm"} 1`,
		`codexec_executions_by_sandbox_path_total{path="forked"} 1`,
		`codexec_executions_by_sandbox_path_total{path="cold"} 1`,
		`codexec_execution_cpu_seconds_total{mode="user"} 1.5`,
		`codexec_execution_cpu_seconds_total{mode="system"} 0.5`,
		`codexec_execution_memory_peak_bytes_count 2`,
		`codexec_execution_written_bytes_count 1`,
		`codexec_execution_network_bytes_total 4096`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
	var nilM *Metrics
	nilM.RunCost(Cost{EndReason: "exit"}) // a nil Metrics records nothing
}
