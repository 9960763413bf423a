package engine

import (
	"syscall"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/runreport"
)

// TestFillOutcomeEnd: the status mapping and the end reason come from the
// same outcome; a full disk found later turns a failure into disk_full.
func TestFillOutcomeEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		oc     outcome
		status string
		reason string
	}{
		{"success", outcome{}, StatusSuccess, runreport.Exit},
		{"exit 3", outcome{Exit: proc.Exit{Code: 3}}, StatusExecutionError, runreport.Exit},
		{"sigkill", outcome{Exit: proc.Exit{Code: -1, Signal: 9}}, StatusExecutionError, runreport.Signal},
		{"oom", outcome{Exit: proc.Exit{Code: -1, Signal: 9, OOMKilled: true}}, StatusExecutionError, runreport.OOM},
		{"timeout", outcome{TimedOut: true, Exit: proc.Exit{Code: -1, Signal: 15}}, StatusTimeout, runreport.Timeout},
		{"cancelled", outcome{Cancelled: true, Exit: proc.Exit{Code: -1, Signal: 9}}, StatusCancelled, runreport.Cancelled},
		{"start failed", outcome{StartErr: syscall.ENOENT}, StatusSetupError, runreport.NotStarted},
	} {
		got := fillOutcome(Result{}, tc.oc, time.Second, 64<<20)
		if got.Status != tc.status || got.EndReason != tc.reason {
			t.Errorf("%s: status %q end_reason %q, want %q %q", tc.name, got.Status, got.EndReason, tc.status, tc.reason)
		}
	}
	res := fillOutcome(Result{}, outcome{Exit: proc.Exit{Code: 1}}, time.Second, 0)
	f := res.End
	f.DiskFull = true
	if got := Ended(res, f).EndReason; got != runreport.DiskFull {
		t.Errorf("failure on a full disk: end_reason %q, want %q", got, runreport.DiskFull)
	}
}
