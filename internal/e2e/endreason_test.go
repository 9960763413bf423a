package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// String shows the measured values (absent ones as -).
func (u usageWire) String() string {
	ms := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatInt(*p, 10)
	}
	return fmt.Sprintf("cpu %s+%s ms, memory %d, processes %d, written %s, %s, %s",
		ms(u.CPUUserMs), ms(u.CPUSystemMs), u.MemoryPeakBytes, u.ProcessesPeak, ms(u.WrittenBytes), u.Sandbox, u.Source)
}

// pidOneWhy: where the program is its pid namespace's init, the kernel
// drops the signals it sends itself without a handler (the run goes on and
// exits), so only a fault (SIGSEGV) ends it by a signal.
const pidOneWhy = "the program is its pid namespace's init, which cannot kill itself with a signal it has no handler for"

// Without a cgroup (the rootless sandbox when no cgroup is delegated to its
// account) memory and file size are per-process limits: the program is
// refused the allocation or the write and exits on the error.
const (
	noCgroupMemoryWhy = "without a cgroup the memory limit is the address space's: the program gets MemoryError and exits"
	noCgroupDiskWhy   = "without a cgroup's bounded disk a file is capped by its size limit: the write fails and the program exits"
)

// segfaultCode overflows a 256 KiB thread stack in C (repr of deeply
// nested lists), which ends the process with SIGSEGV.
const segfaultCode = `import sys, threading
sys.setrecursionlimit(10**6)
threading.stack_size(256 << 10)
l = []
for _ in range(100000):
    l = [l]
t = threading.Thread(target=lambda: repr(l))
t.start()
t.join()
`

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
		// C recursion past a small thread stack faults (SIGSEGV): a signal
		// the kernel delivers even to a pid namespace's init.
		{name: "segfault", code: segfaultCode, status: "execution_error", reason: "signal"},
		{name: "sigkill itself", code: "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", status: "execution_error", reason: "signal",
			skip: map[string]string{"namespace": pidOneWhy, "docker": pidOneWhy, "rootless": pidOneWhy}},
		{name: "sigterm itself", code: "import os, signal; os.kill(os.getpid(), signal.SIGTERM)", status: "execution_error", reason: "signal",
			skip: map[string]string{"namespace": pidOneWhy, "docker": pidOneWhy, "rootless": pidOneWhy}},
		{name: "timeout", code: "import time; time.sleep(30)", timeout: 1000, status: "timeout", reason: "timeout"},
		{name: "oom", code: "b = b'x' * (512 << 20)\nprint(len(b))", status: "execution_error", reason: "oom",
			skip: map[string]string{"subprocess": "subprocess mode has no memory limit to be killed by", "rootless": noCgroupMemoryWhy}},
		{name: "disk full", code: "with open('big', 'wb') as f:\n    for _ in range(64):\n        f.write(b'x' * (1 << 20)); f.flush()",
			status: "execution_error", reason: "disk_full",
			skip: map[string]string{"subprocess": "subprocess mode has no bounded disk (only a file size cap)", "rootless": noCgroupDiskWhy}},
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

// costCode keeps the CPU busy, holds 64 MiB and writes a 100,000-byte file.
const costCode = `b = bytearray(b'x' * (64 << 20))
x = 0
for i in range(3000000):
    x += i
open('out.bin', 'wb').write(b'y' * 100000)
print(x)
`

// TestRunCost: a run's usage is present, plausible and says how it was
// measured: CPU above zero for a busy loop, peak memory above what it
// allocated, bytes written at least the file it wrote, the sandbox path;
// the log entry records the same. A measure the mode cannot take is
// absent, never zero: docker mode measures no CPU or memory (the engine's
// accounting is not the CLI's), nor does subprocess mode for a warm run;
// a namespace run reports CPU wherever the host's cgroups account it (v2,
// or v1 cpuacct, with cpu or in a hierarchy of its own).
func TestRunCost(t *testing.T) {
	mode := endMode()
	s := start(t, "ALLOWED_COMMANDS=python3")
	var r endResult
	res := s.callInto("execute_code", map[string]any{"language": "python", "code": costCode}, &r)
	if r.Status != "success" || r.Usage == nil {
		t.Fatalf("run: %s", text(res))
	}
	u := r.Usage
	t.Logf("%s mode usage: %+v", mode, *u)
	if u.WrittenBytes == nil || *u.WrittenBytes < 100000 {
		t.Errorf("written_bytes %v, want at least the 100000 bytes written", u.WrittenBytes)
	}
	if u.Sandbox != "warm" && u.Sandbox != "forked" && u.Sandbox != "cold" {
		t.Errorf("sandbox %q, want warm, forked or cold", u.Sandbox)
	}
	checkMeasured(t, mode, u)
	var logged struct {
		Usage *usageWire `json:"usage"`
	}
	s.callInto("get_execution_log", map[string]any{"execution_id": r.ID}, &logged)
	if logged.Usage == nil || logged.Usage.Source != u.Source || logged.Usage.MemoryPeakBytes != u.MemoryPeakBytes {
		t.Errorf("log entry's usage %+v, want the result's %+v", logged.Usage, u)
	}
	// execute_command is never served warm: its CPU is measured in every
	// mode that measures anything (the cgroup or the reaped tree's rusage).
	var c endResult
	cres := s.callInto("execute_command", map[string]any{"command": "python3 -c 'x = sum(range(3000000))'"}, &c)
	if c.Status != "success" || c.EndReason != "exit" {
		t.Fatalf("execute_command: %s", text(cres))
	}
	if mode != "docker" && (c.Usage == nil || c.Usage.CPUUserMs == nil || *c.Usage.CPUUserMs+*c.Usage.CPUSystemMs <= 0) {
		t.Errorf("execute_command of a busy loop: usage %+v, want CPU above 0", c.Usage)
	}
	if c.Usage != nil {
		t.Logf("execute_command usage: %+v", *c.Usage)
	}
}

// checkMeasured checks the CPU and memory of costCode's run where mode
// measures them, and that they are absent where it does not.
func checkMeasured(t *testing.T, mode string, u *usageWire) {
	t.Helper()
	if mode == "docker" || mode == "subprocess" && u.Sandbox != "cold" {
		// The container CLI's accounting is not the container's; a
		// subprocess warm runner's process lived before the run.
		if u.CPUUserMs != nil || u.MemoryPeakBytes != 0 || u.Source != "" {
			t.Errorf("%s mode claims a measurement it cannot take for a %s run: %+v", mode, u.Sandbox, *u)
		}
		return
	}
	if u.MemoryPeakBytes < 64<<20 {
		t.Errorf("memory_peak_bytes %d, want above the 64 MiB allocated", u.MemoryPeakBytes)
	}
	if u.Source == "" {
		t.Errorf("usage has measurements but no source: %+v", *u)
	}
	if u.CPUUserMs == nil {
		if mode == "namespace" && hostAccountsCPU() {
			t.Errorf("namespace mode measured no CPU for a %s run on a host whose cgroups account it: %+v", u.Sandbox, *u)
		}
		return
	}
	if *u.CPUUserMs+*u.CPUSystemMs <= 0 {
		t.Errorf("CPU %d+%d ms for a busy loop, want above 0", *u.CPUUserMs, *u.CPUSystemMs)
	}
}

// hostAccountsCPU reports whether namespace mode can measure a run's CPU
// from its cgroup here: a server run as root on cgroup v2, or on v1 with
// cpuacct mounted (with cpu or apart).
func hostAccountsCPU() bool {
	if os.Geteuid() != 0 {
		return false
	}
	for _, f := range []string{"cgroup.controllers", "cpu/cpuacct.usage", "cpuacct/cpuacct.usage"} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", f)); err == nil {
			return true
		}
	}
	return false
}

// busyBash spends ~100+ ms of CPU in the shell itself.
const busyBash = `i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo $i`

// TestRunCostByPath: in namespace mode, runs served by a warm runner (python,
// bash) or forked from the python fork-server report their CPU time from
// their cgroup, like cold ones, wherever the host's cgroups account CPU;
// this includes a cgroup v1 host whose cpuacct hierarchy is apart from cpu.
// Their processes are not the server's children, so the cgroup is the only
// measure.
func TestRunCostByPath(t *testing.T) {
	if endMode() != "namespace" || !hostAccountsCPU() {
		t.Skipf("needs namespace mode as root on a host whose cgroups account CPU (mode %s)", endMode())
	}
	busyPython := "x = 0\nfor i in range(3000000):\n    x += i\nprint(x)\n"
	for _, tc := range []struct {
		fork string
		runs []struct{ language, code, path string }
	}{
		{"on", []struct{ language, code, path string }{{"python", busyPython, "forked"}}},
		{"off", []struct{ language, code, path string }{{"python", busyPython, "warm"}, {"bash", busyBash, "warm"}}},
	} {
		t.Run("fork="+tc.fork, func(t *testing.T) {
			s := start(t, "POOL_FORK="+tc.fork)
			for _, run := range tc.runs {
				u := runServedOn(t, s, run.language, run.code, run.path)
				t.Logf("%s %s run usage: %s", run.language, run.path, u)
				if u.CPUUserMs == nil || *u.CPUUserMs+*u.CPUSystemMs <= 0 || !strings.HasPrefix(u.Source, "cgroup") {
					t.Errorf("%s %s run: usage %s, want CPU above 0 measured by the cgroup", run.language, run.path, u)
				}
			}
		})
	}
}

// runServedOn runs code until a run is served on the sandbox path want
// and returns its usage. Runs go in rounds of three at once: the first
// rounds fill the pool, and a round that finds fewer ready runners than
// runs forks the rest on the spot (python, a fork-server running).
func runServedOn(t *testing.T, s *server, language, code, want string) *usageWire {
	t.Helper()
	var seen []string
	for round := 0; round < 15; round++ {
		results := make([]*mcp.CallToolResult, 3)
		var wg sync.WaitGroup
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				results[i], _ = s.Session.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"language": language, "code": code}})
			}()
		}
		wg.Wait()
		for _, res := range results {
			var r endResult
			if res == nil {
				t.Fatalf("%s run: the call failed", language)
			}
			decodeStructured(t, res, &r)
			if r.Status != "success" || r.Usage == nil {
				t.Fatalf("%s run: %s", language, text(res))
			}
			if r.Usage.Sandbox == want {
				return r.Usage
			}
			seen = append(seen, r.Usage.Sandbox)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no %s run was served %s in 15 rounds (paths %v)", language, want, seen)
	return nil
}

// TestSessionRunCost: in namespace mode a session's runs report their own
// CPU time and the interpreter's peak memory during the run, from the
// session's cgroup, read before and after each run: a busy run that
// allocates 64 MiB reports both, and a following idle run reports neither
// the busy run's CPU nor its memory.
func TestSessionRunCost(t *testing.T) {
	if endMode() != "namespace" || !hostAccountsCPU() {
		t.Skipf("needs namespace mode as root on a host whose cgroups account CPU (mode %s)", endMode())
	}
	s := start(t)
	var sess struct {
		SessionID string `json:"session_id"`
	}
	if res := s.callInto("start_session", map[string]any{"language": "python"}, &sess); res.IsError {
		t.Fatalf("start_session: %s", text(res))
	}
	send := func(code string) *usageWire {
		var r endResult
		res := s.callInto("send_to_session", map[string]any{"session_id": sess.SessionID, "code": code}, &r)
		if r.Status != "success" || r.Usage == nil {
			t.Fatalf("send: %s", text(res))
		}
		return r.Usage
	}
	busy := send(costCode + "del b\n")
	idle := send("y = 1")
	t.Logf("busy send: %s; idle send: %s", busy, idle)
	if busy.CPUUserMs == nil || *busy.CPUUserMs+*busy.CPUSystemMs < 50 || busy.Source != "cgroup" {
		t.Errorf("busy send: usage %s, want its CPU (a busy loop: 50 ms or more) from the cgroup", busy)
	}
	if idle.CPUUserMs == nil || busy.CPUUserMs != nil && *idle.CPUUserMs+*idle.CPUSystemMs >= *busy.CPUUserMs+*busy.CPUSystemMs {
		t.Errorf("idle send: usage %s, want its own CPU, less than the busy send's %s", idle, busy)
	}
	if isV1() {
		if busy.MemoryPeakBytes < 64<<20 || idle.MemoryPeakBytes == 0 || idle.MemoryPeakBytes >= 64<<20 {
			t.Errorf("peak memory: busy send %d, idle send %d; want the busy one above the 64 MiB it held and the idle one below", busy.MemoryPeakBytes, idle.MemoryPeakBytes)
		}
	}
}

// isV1 reports whether the host's cgroups are v1 (the only ones whose
// peak memory a session can restart for each run).
func isV1() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err != nil
}
