package engine

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
		f    EndFacts
		want string
	}{
		{"exited, any code", EndFacts{}, EndExit},
		{"killed by a signal", EndFacts{Signal: int(syscall.SIGTERM)}, EndSignal},
		{"memory limit", EndFacts{OOMKilled: true, Signal: kill}, EndOOM},
		{"timeout, then killed", EndFacts{TimedOut: true, Signal: kill}, EndTimeout},
		{"cancelled, then killed", EndFacts{Cancelled: true, Signal: kill}, EndCancelled},
		{"cancelled while starting", EndFacts{Cancelled: true, NotStarted: true}, EndCancelled},
		{"never started", EndFacts{NotStarted: true}, EndNotStarted},
		{"full disk, failed", EndFacts{DiskFull: true}, EndDiskFull},
		{"full disk, file size signal", EndFacts{DiskFull: true, Signal: int(syscall.SIGXFSZ)}, EndDiskFull},
		{"out of memory on a full disk", EndFacts{DiskFull: true, OOMKilled: true}, EndOOM},
		{"interpreter lost", EndFacts{Lost: true}, EndLost},
		{"timed out and lost", EndFacts{TimedOut: true, Lost: true}, EndTimeout},
	} {
		if got := EndReason(tc.f); got != tc.want {
			t.Errorf("%s: EndReason(%+v) = %q, want %q", tc.name, tc.f, got, tc.want)
		}
	}
}

// TestFillOutcomeEnd: the status mapping and the end reason come from the
// same outcome; a full disk found later turns a failure into disk_full.
func TestFillOutcomeEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		oc     outcome
		status string
		reason string
	}{
		{"success", outcome{}, StatusSuccess, EndExit},
		{"exit 3", outcome{Exit: proc.Exit{Code: 3}}, StatusExecutionError, EndExit},
		{"sigkill", outcome{Exit: proc.Exit{Code: -1, Signal: 9}}, StatusExecutionError, EndSignal},
		{"oom", outcome{Exit: proc.Exit{Code: -1, Signal: 9, OOMKilled: true}}, StatusExecutionError, EndOOM},
		{"timeout", outcome{TimedOut: true, Exit: proc.Exit{Code: -1, Signal: 15}}, StatusTimeout, EndTimeout},
		{"cancelled", outcome{Cancelled: true, Exit: proc.Exit{Code: -1, Signal: 9}}, StatusCancelled, EndCancelled},
		{"start failed", outcome{StartErr: syscall.ENOENT}, StatusSetupError, EndNotStarted},
	} {
		got := fillOutcome(Result{}, tc.oc, time.Second, 64<<20)
		if got.Status != tc.status || got.EndReason != tc.reason {
			t.Errorf("%s: status %q end_reason %q, want %q %q", tc.name, got.Status, got.EndReason, tc.status, tc.reason)
		}
	}
	res := fillOutcome(Result{}, outcome{Exit: proc.Exit{Code: 1}}, time.Second, 0)
	f := res.End
	f.DiskFull = true
	if got := Ended(res, f).EndReason; got != EndDiskFull {
		t.Errorf("failure on a full disk: end_reason %q, want %q", got, EndDiskFull)
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
		if diff := cmp.Diff(tc.want, usageOf(tc.ex)); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", tc.name, diff)
		}
	}
	net := withNetwork(nil, []egress.Entry{{BytesSent: 10, BytesReceived: 90}, {BytesSent: 5}})
	if diff := cmp.Diff(&Usage{NetworkBytes: i64(105)}, net); diff != "" {
		t.Errorf("network bytes (-want +got):\n%s", diff)
	}
	if got := withNetwork(nil, nil); got != nil {
		t.Errorf("no audit: usage %+v, want none", got)
	}
}
