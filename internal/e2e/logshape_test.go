package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resultKeys are the fields every result of execute_code's shape carries,
// false and null included: the documented outputs show them in every
// example.
var resultKeys = []string{"success", "execution_id", "stdout", "stderr", "exit_code", "duration_ms",
	"truncated", "timed_out", "error_message", "status", "execution_time", "artifacts"}

// checkResultKeys fails the test for each of resultKeys (and extra) that
// the structured result res lacks.
func checkResultKeys(t *testing.T, what string, res *mcp.CallToolResult, extra ...string) map[string]any {
	t.Helper()
	var m map[string]any
	decodeStructured(t, res, &m)
	for _, k := range append(append([]string{}, resultKeys...), extra...) {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: result lacks %q: %v", what, k, m)
		}
	}
	return m
}

// TestResultsCarryEveryDocumentedField checks that execute_code, run_script,
// send_to_session and a background run's result (get_run) carry truncated,
// timed_out and error_message when they are false or null, and a code-mode
// result its result, logs and metrics when empty.
func TestResultsCarryEveryDocumentedField(t *testing.T) {
	s := start(t)
	res := s.call("execute_code", map[string]any{"language": "bash", "code": "echo hi"})
	m := checkResultKeys(t, "execute_code", res, "language")
	if m["truncated"] != false || m["timed_out"] != false || m["error_message"] != nil {
		t.Errorf("execute_code: truncated %v, timed_out %v, error_message %v; want false, false, null", m["truncated"], m["timed_out"], m["error_message"])
	}
	if res := s.call("save_script", map[string]any{"name": "shape", "language": "bash", "code": "echo script"}); res.IsError {
		t.Fatalf("save_script: %s", text(res))
	}
	checkResultKeys(t, "run_script", s.call("run_script", map[string]any{"name": "shape"}), "language")
	sess := s.startSession("python")
	sm := checkResultKeys(t, "send_to_session", s.call("send_to_session", map[string]any{"session_id": sess.SessionID, "code": "print(1)"}), "session_id")
	if sm["truncated"] != false {
		t.Errorf("send_to_session: truncated %v", sm["truncated"])
	}
	// Code mode: result (null when nothing came back), logs ([] when none)
	// and metrics in the structured result as in the text.
	cm := s.call("execute_code", map[string]any{"code": "const x = 1;"})
	var cms map[string]any
	decodeStructured(t, cm, &cms)
	if logs, ok := cms["logs"].([]any); !ok || len(logs) != 0 || cms["metrics"] == nil {
		t.Errorf("code mode without logs: logs %v, metrics %v", cms["logs"], cms["metrics"])
	}
	if v, ok := cms["result"]; !ok || v != nil {
		t.Errorf("code mode returning nothing: result %v (present %v), want null", v, ok)
	}
	id := startBackground(t, s.Session, "execute_code", map[string]any{"language": "bash", "code": "echo bg"})
	v := (&reader{id: id}).untilEnd(t, s.Session, time.Minute)
	var bg map[string]any
	if err := json.Unmarshal(v.Result, &bg); err != nil || v.Status != "success" {
		t.Fatalf("get_run: status %s result %s (%v)", v.Status, v.Result, err)
	}
	for _, k := range resultKeys {
		if _, ok := bg[k]; !ok {
			t.Errorf("get_run result lacks %q: %s", k, v.Result)
		}
	}
}

// TestOneLogEntryPerExecution runs one-shot, script, session and background
// executions, kills the server with SIGKILL while a background run is in
// flight, restarts it on the same data, and checks that the daily
// executions file and the session's file hold exactly one line per
// execution: the finished entry with its output and exit code, or a lost
// entry for the run the kill ended.
func TestOneLogEntryPerExecution(t *testing.T) {
	data := t.TempDir()
	s := start(t, "CODEXEC_DATA_DIR="+data)
	want := map[string]string{} // execution id → status
	for _, code := range []string{"echo one", "echo two; exit 3"} {
		r, _ := s.exec(map[string]any{"language": "bash", "code": code})
		want[r.ExecutionID] = r.Status
	}
	if res := s.call("save_script", map[string]any{"name": "once", "language": "bash", "code": "echo script"}); res.IsError {
		t.Fatalf("save_script: %s", text(res))
	}
	var sr execResult
	s.callInto("run_script", map[string]any{"name": "once"}, &sr)
	want[sr.ExecutionID] = sr.Status
	done := startBackground(t, s.Session, "execute_code", map[string]any{"language": "bash", "code": "echo bg"})
	if v := (&reader{id: done}).untilEnd(t, s.Session, time.Minute); v.Status != "success" {
		t.Fatalf("background run: %+v", v)
	}
	want[done] = "success"
	sess := s.startSession("python")
	inSession := map[string]string{}
	for _, code := range []string{"x = 6", "print(x * 7)"} {
		r, _ := s.send(sess.SessionID, code, nil)
		inSession[r.ExecutionID] = r.Status
	}
	lost := startBackground(t, s.Session, "execute_code", map[string]any{"language": "bash", "code": "echo started; sleep 300"})
	want[lost] = "lost"
	// A session call in flight at the kill: its id is the one the session's
	// file names besides the two finished ones.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = s.Session.CallTool(ctx, &mcp.CallToolParams{Name: "send_to_session",
			Arguments: map[string]any{"session_id": sess.SessionID, "code": "import time\ntime.sleep(300)"}})
	}()
	waitInFlight(t, data, 2)
	if err := s.Cmd.Process.Kill(); err != nil { // SIGKILL of the server we started
		t.Fatal(err)
	}
	_ = s.Session.Close() // reaps the killed process

	s2 := start(t, "CODEXEC_DATA_DIR="+data)
	if v := getRun(t, s2.Session, lost, 0, 0, 0); v.Status != "lost" {
		t.Errorf("get_run of the run the kill ended: %+v", v)
	}
	logs := filepath.Join(data, "logs")
	daily, _ := filepath.Glob(filepath.Join(logs, "executions-*.jsonl"))
	checkOneLinePerRun(t, daily, want)
	sessionFile := filepath.Join(logs, "session-"+sess.SessionID+".jsonl")
	for _, m := range jsonLines(t, sessionFile) {
		if id, _ := m["execution_id"].(string); id != "" && inSession[id] == "" {
			inSession[id] = "lost" // the call in flight at the kill
		}
	}
	if len(inSession) != 3 {
		t.Errorf("session file names %d executions, want the two finished and the one in flight: %v", len(inSession), inSession)
	}
	checkOneLinePerRun(t, []string{sessionFile}, inSession)
}

// waitInFlight waits until the in-flight journal of the server on data
// directory data holds n runs started and not ended.
func waitInFlight(t *testing.T, data string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(data, "logs", "inflight", "*.journal"))
		open := map[string]bool{}
		for _, f := range files {
			for _, m := range jsonLines(t, f) {
				id, _ := m["id"].(string)
				switch m["op"] {
				case "run":
					open[id] = true
				case "done":
					delete(open, id)
				}
			}
		}
		if len(open) >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("fewer than %d runs in flight after 30s", n)
}

// checkOneLinePerRun reads files and checks that they name exactly the
// executions of want, each on one line: an execution entry with the wanted
// status, with stdout and exit_code (null for a lost run).
func checkOneLinePerRun(t *testing.T, files []string, want map[string]string) {
	t.Helper()
	lines := map[string]int{}
	got := map[string]string{}
	for _, f := range files {
		for _, m := range jsonLines(t, f) {
			id, _ := m["execution_id"].(string)
			if id == "" {
				continue // session lifecycle lines
			}
			lines[id]++
			if m["type"] != "execution" {
				t.Errorf("%s: a %v line for %s", filepath.Base(f), m["type"], id)
			}
			_, hasOut := m["stdout"]
			code, hasCode := m["exit_code"]
			status, _ := m["status"].(string)
			if !hasOut || !hasCode || (status == "lost") != (code == nil) {
				t.Errorf("%s: entry of %s without its output or exit code: %v", filepath.Base(f), id, m)
			}
			got[id] = status
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("logged executions (-want +got):\n%s", diff)
	}
	for id, n := range lines {
		if n != 1 {
			t.Errorf("execution %s has %d lines, want 1", id, n)
		}
	}
}

// jsonLines decodes the JSONL file at path, one map per line.
func jsonLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Errorf("%s: bad line %q", filepath.Base(path), sc.Text())
			continue
		}
		out = append(out, m)
	}
	return out
}
