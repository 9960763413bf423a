package e2e

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// endResult is what a run's result says about its end and its cost.
type endResult struct {
	Status    string     `json:"status"`
	EndReason string     `json:"end_reason"`
	ID        string     `json:"execution_id"`
	Usage     *usageWire `json:"usage"`
}

// usageWire is a result's usage object.
type usageWire struct {
	CPUUserMs       *int64 `json:"cpu_user_ms"`
	CPUSystemMs     *int64 `json:"cpu_system_ms"`
	MemoryPeakBytes int64  `json:"memory_peak_bytes"`
	ProcessesPeak   int64  `json:"processes_peak"`
	WrittenBytes    *int64 `json:"written_bytes"`
	Sandbox         string `json:"sandbox"`
	Source          string `json:"source"`
}

// pidOneWhy: where the program is its pid namespace's init, the kernel
// drops the signals it sends itself without a handler (the run goes on and
// exits), so only a fault (SIGSEGV) ends it by a signal.
const pidOneWhy = "the program is its pid namespace's init, which cannot kill itself with a signal it has no handler for"

// endMode is the sandbox mode the test servers run in.
func endMode() string {
	if m := os.Getenv("CODEXEC_TEST_SANDBOX_MODE"); m != "" && m != "auto" {
		return m
	}
	if os.Geteuid() == 0 {
		return "namespace"
	}
	return "subprocess"
}

// TestEndReasons: each way a run can end gives its end_reason next to the
// unchanged status, in the result and in the log entry: exit, a signal the
// code sent itself, the timeout, the memory limit, the bounded disk full,
// and cancel_run of a background run. Output over the limit is only
// truncated, never a reason to stop a run, so it ends with exit.
func TestEndReasons(t *testing.T) {
	mode := endMode()
	s := start(t, "CODEXEC_MEMORY_LIMIT=128m", "CODEXEC_DISK_LIMIT=32m", "CODEXEC_MAX_OUTPUT_CHARS=1000", "CODEXEC_KILL_GRACE_MS=300")
	for _, tc := range []struct {
		name, code     string
		timeout        int
		status, reason string
		skip           map[string]string
	}{
		{name: "exit", code: "import sys; sys.exit(3)", status: "execution_error", reason: "exit"},
		{name: "success", code: "print('ok')", status: "success", reason: "exit"},
		{name: "output over the limit", code: "print('x' * 100000)", status: "success", reason: "exit"},
		{name: "segfault", code: "import ctypes; ctypes.string_at(0)", status: "execution_error", reason: "signal"},
		{name: "sigkill itself", code: "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", status: "execution_error", reason: "signal",
			skip: map[string]string{"namespace": pidOneWhy, "docker": pidOneWhy}},
		{name: "sigterm itself", code: "import os, signal; os.kill(os.getpid(), signal.SIGTERM)", status: "execution_error", reason: "signal",
			skip: map[string]string{"namespace": pidOneWhy, "docker": pidOneWhy}},
		{name: "timeout", code: "import time; time.sleep(30)", timeout: 1000, status: "timeout", reason: "timeout"},
		{name: "oom", code: "b = b'x' * (512 << 20)\nprint(len(b))", status: "execution_error", reason: "oom",
			skip: map[string]string{"subprocess": "subprocess mode has no memory limit to be killed by"}},
		{name: "disk full", code: "with open('big', 'wb') as f:\n    for _ in range(64):\n        f.write(b'x' * (1 << 20)); f.flush()",
			status: "execution_error", reason: "disk_full",
			skip: map[string]string{"subprocess": "subprocess mode has no bounded disk (only a file size cap)",
				"docker": "docker mode bounds the disk only with a rootful engine's disk images"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := tc.skip[mode]; ok {
				t.Skip(why)
			}
			args := map[string]any{"language": "python", "code": tc.code}
			if tc.timeout > 0 {
				args["timeout_ms"] = tc.timeout
			}
			var r endResult
			res := s.callInto("execute_code", args, &r)
			if r.Status != tc.status || r.EndReason != tc.reason {
				t.Fatalf("status %q end_reason %q, want %q %q (usage %+v): %s", r.Status, r.EndReason, tc.status, tc.reason, r.Usage, text(res))
			}
			var logged endResult
			s.callInto("get_execution_log", map[string]any{"execution_id": r.ID}, &logged)
			if logged.EndReason != tc.reason {
				t.Errorf("log entry's end_reason %q, want %q", logged.EndReason, tc.reason)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		id := startBackground(t, s.Session, "execute_code", map[string]any{"language": "python", "code": "import time; print('up', flush=True); time.sleep(60)"})
		rd := &reader{id: id}
		for deadline := time.Now().Add(20 * time.Second); rd.stdout.Len() == 0 && time.Now().Before(deadline); {
			rd.step(t, s.Session, 500)
		}
		if res := callTool(t, s.Session, "cancel_run", map[string]any{"execution_id": id}); res.IsError {
			t.Fatalf("cancel_run: %s", text(res))
		}
		v := rd.untilEnd(t, s.Session, 20*time.Second)
		var r endResult
		if err := json.Unmarshal(v.Result, &r); err != nil {
			t.Fatalf("run result %s: %v", v.Result, err)
		}
		if r.Status != "cancelled" || r.EndReason != "cancelled" {
			t.Fatalf("status %q end_reason %q, want cancelled twice: %s", r.Status, r.EndReason, v.Result)
		}
	})
}
