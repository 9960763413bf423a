package runreport

import (
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/proc"
)

// TestEndReason: each fact, and each pair where one cause explains the
// other, gives the one documented reason.
func TestEndReason(t *testing.T) {
	kill := int(syscall.SIGKILL)
	for _, tc := range []struct {
		name string
		f    Facts
		want string
	}{
		{"exited, any code", Facts{}, Exit},
		{"killed by a signal", Facts{Signal: int(syscall.SIGTERM)}, Signal},
		{"memory limit", Facts{OOMKilled: true, Signal: kill}, OOM},
		{"timeout, then killed", Facts{TimedOut: true, Signal: kill}, Timeout},
		{"cancelled, then killed", Facts{Cancelled: true, Signal: kill}, Cancelled},
		{"cancelled while starting", Facts{Cancelled: true, NotStarted: true}, Cancelled},
		{"never started", Facts{NotStarted: true}, NotStarted},
		{"full disk, failed", Facts{DiskFull: true}, DiskFull},
		{"full disk, file size signal", Facts{DiskFull: true, Signal: int(syscall.SIGXFSZ)}, DiskFull},
		{"out of memory on a full disk", Facts{DiskFull: true, OOMKilled: true}, OOM},
		{"interpreter lost", Facts{Lost: true}, Lost},
		{"timed out and lost", Facts{TimedOut: true, Lost: true}, Timeout},
	} {
		if got := Reason(tc.f); got != tc.want {
			t.Errorf("%s: Reason(%+v) = %q, want %q", tc.name, tc.f, got, tc.want)
		}
	}
}

// TestUsageOf: what was measured is there with its source; what was not
// is absent, never a zero.
func TestUsageOf(t *testing.T) {
	i64 := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name string
		ex   proc.Exit
		want *Usage
	}{
		{"nothing measured", proc.Exit{}, nil},
		{"path only", proc.Exit{Usage: proc.Usage{Path: proc.PathWarm}}, &Usage{Sandbox: "warm"}},
		{"cgroup memory, rusage cpu", proc.Exit{MemoryPeakBytes: 8 << 20, Usage: proc.Usage{CPUUser: 1500 * time.Microsecond,
			CPUSystem: 0, CPUFrom: proc.FromRusage, RusageMaxRSS: 4 << 20, Path: proc.PathCold}},
			&Usage{CPUUserMs: i64(1), CPUSystemMs: i64(0), MemoryPeakBytes: 8 << 20, Sandbox: "cold", Source: "cgroup+rusage"}},
		{"all cgroup", proc.Exit{MemoryPeakBytes: 8 << 20, Usage: proc.Usage{CPUUser: 20 * time.Millisecond, CPUSystem: 3 * time.Millisecond,
			CPUFrom: proc.FromCgroup, ProcessesPeak: 3, Path: proc.PathForked}},
			&Usage{CPUUserMs: i64(20), CPUSystemMs: i64(3), MemoryPeakBytes: 8 << 20, ProcessesPeak: 3, Sandbox: "forked", Source: "cgroup"}},
		{"all rusage", proc.Exit{Usage: proc.Usage{CPUUser: 7 * time.Millisecond, CPUFrom: proc.FromRusage, RusageMaxRSS: 9 << 20}},
			&Usage{CPUUserMs: i64(7), CPUSystemMs: i64(0), MemoryPeakBytes: 9 << 20, Source: "rusage"}},
	} {
		if diff := cmp.Diff(tc.want, FromExit(tc.ex)); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", tc.name, diff)
		}
	}
	net := WithNetwork(nil, []egress.Entry{{BytesSent: 10, BytesReceived: 90}, {BytesSent: 5}})
	if diff := cmp.Diff(&Usage{NetworkBytes: i64(105)}, net); diff != "" {
		t.Errorf("network bytes (-want +got):\n%s", diff)
	}
	if got := WithNetwork(nil, nil); got != nil {
		t.Errorf("no audit: usage %+v, want none", got)
	}
}

// TestBetween: a session run's CPU is the difference of two readings, its
// memory the peak since a reading that reset it; what either reading
// lacks, or a counter that went back, is absent.
func TestBetween(t *testing.T) {
	i64 := func(n int64) *int64 { return &n }
	ms := time.Millisecond
	before := proc.Reading{CPUUser: 100 * ms, CPUSystem: 10 * ms, CPUKnown: true, MemoryPeak: 90 << 20, PeakReset: true}
	for _, tc := range []struct {
		name          string
		before, after proc.Reading
		want          *Usage
	}{
		{"cpu and memory", before, proc.Reading{CPUUser: 350 * ms, CPUSystem: 14 * ms, CPUKnown: true, MemoryPeak: 40 << 20},
			&Usage{CPUUserMs: i64(250), CPUSystemMs: i64(4), MemoryPeakBytes: 40 << 20, WrittenBytes: i64(7), Source: "cgroup"}},
		{"peak not reset", proc.Reading{CPUUser: 100 * ms, CPUKnown: true}, proc.Reading{CPUUser: 100 * ms, CPUKnown: true, MemoryPeak: 40 << 20},
			&Usage{CPUUserMs: i64(0), CPUSystemMs: i64(0), WrittenBytes: i64(7), Source: "cgroup"}},
		{"cpu unreadable after", before, proc.Reading{MemoryPeak: 40 << 20},
			&Usage{MemoryPeakBytes: 40 << 20, WrittenBytes: i64(7), Source: "cgroup"}},
		{"counter went back", before, proc.Reading{CPUUser: 5 * ms, CPUSystem: 1 * ms, CPUKnown: true},
			&Usage{WrittenBytes: i64(7)}},
	} {
		if diff := cmp.Diff(tc.want, Between(Session(7, nil), tc.before, tc.after)); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", tc.name, diff)
		}
	}
}
