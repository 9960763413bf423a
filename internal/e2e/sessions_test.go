package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

type startOut struct {
	Success   bool   `json:"success"`
	SessionID string `json:"session_id"`
	Language  string `json:"language"`
	Name      string `json:"name"`
	Pid       int    `json:"pid"`
	StartedAt string `json:"started_at"`
}

func (s *server) startSession(lang string, extra ...string) startOut {
	s.t.Helper()
	args := map[string]any{"language": lang}
	if len(extra) > 0 {
		args["name"] = extra[0]
	}
	var out startOut
	res := s.callInto("start_session", args, &out)
	if res.IsError || !out.Success || !strings.HasPrefix(out.SessionID, "sess_") || out.Pid <= 0 {
		s.t.Fatalf("start_session: %+v %s", out, text(res))
	}
	return out
}

func (s *server) send(id, code string, extra map[string]any) (execResult, bool) {
	s.t.Helper()
	args := map[string]any{"session_id": id, "code": code}
	for k, v := range extra {
		args[k] = v
	}
	var r execResult
	res := s.callInto("send_to_session", args, &r)
	return r, res.IsError
}

// TestSessionFlowSeed000: start → send ×3 → close, state persisting.
func TestSessionFlowSeed000(t *testing.T) {
	s := start(t)
	for _, c := range []struct{ lang, a, b, c, want string }{
		{"python", "import json\ndata = {'category': ['A', 'B'], 'value': [42.3, 18.7]}", "def mean(xs):\n    return sum(xs) / len(xs)\ntotal = mean(data['value'])", "print(round(total, 2))\nlen(data)", "30.5\n2\n"},
		{"node", "const data = {value: [42.3, 18.7]}", "function mean(xs) {\n  return xs.reduce((a, b) => a + b) / xs.length\n}\nlet total = mean(data.value)", "console.log(total.toFixed(2)); data.value.length", "30.50\n2\n"},
	} {
		t.Run(c.lang, func(t *testing.T) {
			sess := s.startSession(c.lang, "data-analysis")
			for _, code := range []string{c.a, c.b} {
				if r, isErr := s.send(sess.SessionID, code, nil); isErr || r.Status != "success" {
					t.Fatalf("send %q: %+v", code, r)
				}
			}
			r, _ := s.send(sess.SessionID, c.c, nil)
			if r.Stdout != c.want || !strings.HasPrefix(r.ExecutionID, "exec_") {
				t.Fatalf("third send: %+v", r)
			}
			var closed struct {
				Success         bool   `json:"success"`
				SessionID       string `json:"session_id"`
				DurationTotalMs int64  `json:"duration_total_ms"`
				ExecutionsCount int    `json:"executions_count"`
			}
			s.callInto("close_session", map[string]any{"session_id": sess.SessionID}, &closed)
			if !closed.Success || closed.ExecutionsCount != 3 || closed.DurationTotalMs <= 0 {
				t.Fatalf("close: %+v", closed)
			}
			if _, isErr := s.send(sess.SessionID, "1", nil); !isErr {
				t.Fatal("send after close must fail")
			}
			checkSessionLog(t, s.DataDir, sess.SessionID, 3)
		})
	}
}

// checkSessionLog reads session-<id>.jsonl and checks its lifecycle entries:
// session_start, execs executions (one entry each, with its output) and
// session_end.
func checkSessionLog(t *testing.T, dataDir, id string, execs int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "logs", "session-"+id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad log line %q", line)
		}
		if m["session_id"] != id {
			t.Errorf("entry without session id: %v", m)
		}
		if m["type"] == "execution" {
			id, _ := m["execution_id"].(string)
			if _, ok := m["stdout"]; seen[id] || !ok || id == "" {
				t.Errorf("execution %q: a second entry, or one without its output: %v", id, m)
			}
			seen[id] = true
		}
		types = append(types, m["type"].(string))
	}
	if len(types) != execs+2 || len(seen) != execs || types[0] != "session_start" || types[len(types)-1] != "session_end" {
		t.Errorf("log entry types %v", types)
	}
}

func TestSessionTrailingExpressionAndErrors(t *testing.T) {
	s := start(t)
	sess := s.startSession("python")
	r, _ := s.send(sess.SessionID, "x = 42\nx", nil)
	if r.Stdout != "42\n" {
		t.Errorf("trailing expression: %q", r.Stdout)
	}
	r, _ = s.send(sess.SessionID, "undefined_variable", nil)
	if r.Success || r.Status != "execution_error" || !strings.Contains(r.Stderr, "NameError: name 'undefined_variable' is not defined") || !strings.Contains(r.Stderr, `File "<stdin>", line 1`) {
		t.Errorf("NameError: %+v", r)
	}
	r, _ = s.send(sess.SessionID, "import subprocess\nsubprocess.run(['echo', 'child output'])\nimport sys\nprint('to err', file=sys.stderr)", nil)
	if !strings.Contains(r.Stdout, "child output\n") || r.Stderr != "to err\n" {
		t.Errorf("child output/stderr: %+v", r)
	}
	r, _ = s.send(sess.SessionID, "open('made.txt', 'w').write('x')", nil)
	if len(r.Artifacts) != 1 || r.Artifacts[0] != "made.txt" {
		t.Errorf("artifacts %v", r.Artifacts)
	}
}

// TestSessionTimeoutKeepsState: `while True: pass` is interrupted and the
// session's state survives.
func TestSessionTimeoutKeepsState(t *testing.T) {
	s := start(t)
	for _, c := range []struct{ lang, set, loop, get string }{
		{"python", "x = 7", "while True: pass", "print(x)"},
		{"node", "var x = 7", "while (true) {}", "console.log(x)"},
		{"node", "var x = 7", "await new Promise(() => {})", "console.log(x)"},
	} {
		t.Run(c.lang, func(t *testing.T) {
			sess := s.startSession(c.lang)
			s.send(sess.SessionID, c.set, nil)
			r, _ := s.send(sess.SessionID, c.loop, map[string]any{"timeout_ms": 500})
			if r.Status != "timeout" || !r.TimedOut || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "preserved") {
				t.Fatalf("timeout result: %+v", r)
			}
			r, _ = s.send(sess.SessionID, c.get, nil)
			if r.Status != "success" || r.Stdout != "7\n" {
				t.Fatalf("state lost after timeout: %+v", r)
			}
		})
	}
}

// TestSessionUnresponsiveIsKilled: code that ignores the interrupt is
// killed after the grace, and the result says the state is lost.
func TestSessionUnresponsiveIsKilled(t *testing.T) {
	s := start(t, "CODEXEC_KILL_GRACE_MS=300")
	sess := s.startSession("python")
	r, _ := s.send(sess.SessionID, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", map[string]any{"timeout_ms": 300})
	if r.Status != "timeout" || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "state is lost") {
		t.Fatalf("got %+v", r)
	}
	if _, isErr := s.send(sess.SessionID, "1", nil); !isErr {
		t.Fatal("the killed session must be gone")
	}
}

func TestSessionDeathDetected(t *testing.T) {
	s := start(t)
	sess := s.startSession("python")
	r, _ := s.send(sess.SessionID, "import os\nos._exit(3)", nil)
	if r.Success || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "exited with code 3") {
		t.Fatalf("got %+v", r)
	}
	var list struct {
		Sessions []map[string]any `json:"sessions"`
	}
	s.callInto("list_sessions", map[string]any{}, &list)
	for _, e := range list.Sessions {
		if e["session_id"] == sess.SessionID {
			t.Fatalf("a dead session whose state is lost must not stay listed: %v", e)
		}
	}
	if _, err := os.Stat(filepath.Join("/proc", itoa(sess.Pid))); err == nil {
		if st, _ := os.ReadFile(filepath.Join("/proc", itoa(sess.Pid), "stat")); !strings.Contains(string(st), ") Z") {
			t.Errorf("interpreter %d still alive", sess.Pid)
		} else {
			t.Errorf("interpreter %d left as a zombie", sess.Pid)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestSessionListAndLimits(t *testing.T) {
	s := start(t, "CODEXEC_MAX_SESSIONS=2")
	a := s.startSession("python", "first")
	s.send(a.SessionID, "import json", nil)
	s.startSession("node", "second")
	res := s.call("start_session", map[string]any{"language": "python"})
	if !res.IsError || !strings.Contains(text(res), "CODEXEC_MAX_SESSIONS") {
		t.Fatalf("third session allowed: %s", text(res))
	}
	var list struct {
		Sessions []struct {
			SessionID         string   `json:"session_id"`
			Name              string   `json:"name"`
			Language          string   `json:"language"`
			ExecutionsCount   int      `json:"executions_count"`
			MemoryMB          float64  `json:"memory_mb"`
			PackagesInstalled []string `json:"packages_installed"`
			LastActivityAt    string   `json:"last_activity_at"`
		} `json:"sessions"`
	}
	s.callInto("list_sessions", map[string]any{}, &list)
	if len(list.Sessions) != 2 || list.Sessions[0].Name != "second" || list.Sessions[1].ExecutionsCount != 1 {
		t.Fatalf("list %+v", list)
	}
	for _, e := range list.Sessions {
		if e.MemoryMB < 1 || e.PackagesInstalled == nil {
			t.Errorf("memory/packages not reported: %+v", e)
		}
	}
}

// TestSessionIdleTimeout: with the close idle action, an idle session ends
// and its state is gone (the pause action: TestIdlePauses).
func TestSessionIdleTimeout(t *testing.T) {
	s := start(t, "CODEXEC_SESSION_IDLE_TIMEOUT_MS=400", "CODEXEC_SESSION_IDLE_ACTION=close")
	sess := s.startSession("python")
	time.Sleep(1500 * time.Millisecond)
	if _, isErr := s.send(sess.SessionID, "1", nil); !isErr {
		t.Fatal("idle session still usable")
	}
	b, _ := os.ReadFile(filepath.Join(s.DataDir, "logs", "session-"+sess.SessionID+".jsonl"))
	if !strings.Contains(string(b), `"reason":"idle_timeout"`) {
		t.Errorf("no idle_timeout session_end: %s", b)
	}
}

// TestExecuteCodeWithSessionID: seed 003's session_id runs in the session.
func TestExecuteCodeWithSessionID(t *testing.T) {
	s := start(t)
	sess := s.startSession("python")
	r, _ := s.exec(map[string]any{"language": "python", "code": "counter = 10", "session_id": sess.SessionID})
	if r.Status != "success" {
		t.Fatalf("%+v", r)
	}
	r, _ = s.exec(map[string]any{"language": "python", "code": "counter += 1\nprint(counter)", "session_id": sess.SessionID, "timeout": 5})
	if r.Stdout != "11\n" {
		t.Fatalf("%+v", r)
	}
}

// TestSessionsStopWithClient: when the client disconnects, the server stops
// every interpreter before it exits.
func TestSessionsStopWithClient(t *testing.T) {
	s := start(t)
	var pids []string
	for _, lang := range []string{"python", "node"} {
		sess := s.startSession(lang)
		r, _ := s.send(sess.SessionID, map[string]string{"python": "import os\nos.getpid()", "node": "process.pid"}[lang], nil)
		pids = append(pids, strings.TrimSpace(r.Stdout))
	}
	tag := s.DataDir // every interpreter's working directory lies below the data dir
	if live := processesUnder(tag); len(live) < 2 {
		t.Fatalf("the probe does not see the running interpreters: %v", live)
	}
	if err := s.Session.Close(); err != nil {
		t.Fatal(err)
	}
	_ = s.Cmd.Wait()
	time.Sleep(200 * time.Millisecond)
	if left := processesUnder(tag); len(left) > 0 {
		t.Fatalf("interpreters outlived the server: %v (in-sandbox pids %v)", left, pids)
	}
}

// processesUnder lists live processes whose working directory lies below dir.
func processesUnder(dir string) []string {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err == nil && strings.HasPrefix(cwd, dir) {
			out = append(out, filepath.Base(p)+":"+cwd)
		}
	}
	return out
}

// TestCloseSessionKillsRunningCode: close_session (seed 000: "Kill a session
// process") does not wait for running code; the running call says so.
func TestCloseSessionKillsRunningCode(t *testing.T) {
	s := start(t)
	sess := s.startSession("python")
	done := make(chan execResult, 1)
	go func() {
		var r execResult
		decodeStructured(t, s.call("send_to_session", map[string]any{"session_id": sess.SessionID, "code": "import time\ntime.sleep(60)", "timeout_ms": 120000}), &r)
		done <- r
	}()
	time.Sleep(500 * time.Millisecond)
	begin := time.Now()
	res := s.call("close_session", map[string]any{"session_id": sess.SessionID})
	if res.IsError || time.Since(begin) > 10*time.Second {
		t.Fatalf("close_session: %s after %v", text(res), time.Since(begin))
	}
	select {
	case r := <-done:
		if r.Success || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "state is lost") {
			t.Fatalf("running call: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the running send did not return after close_session")
	}
}

// TestSessionChangesInQuietWorkspace: in the real sandbox, a send to a
// session whose workspace has been empty and unchanged for a while (whose
// snapshots then skip the walk) still reports what it creates, in a
// subdirectory and by a process it leaves running, and what it modifies.
func TestSessionChangesInQuietWorkspace(t *testing.T) {
	s := start(t)
	sess := s.startSession("python")
	quiet := func() { time.Sleep(300 * time.Millisecond) }
	for _, c := range []struct {
		code string
		want []string
	}{
		{"import os, subprocess, time\nx = 0", []string{}},
		{"x += 1", []string{}},
		{"subprocess.Popen(['sh', '-c', 'sleep 0.3; mkdir -p sub/dir; echo x > sub/dir/f']); time.sleep(1)", []string{"sub/dir/f"}},
		{"open('sub/dir/f', 'a').write('y')", []string{"sub/dir/f"}},
		{"import shutil; shutil.rmtree('sub')", []string{}},
		{"x += 1", []string{}},
		{"open('top.txt', 'w').write('z')", []string{"top.txt"}},
	} {
		quiet()
		r, isErr := s.send(sess.SessionID, c.code, nil)
		if isErr || !r.Success {
			t.Fatalf("%q: %+v", c.code, r)
		}
		if got := append([]string{}, r.Artifacts...); !slices.Equal(got, c.want) {
			t.Errorf("%q: artifacts %v, want %v", c.code, got, c.want)
		}
	}
}
