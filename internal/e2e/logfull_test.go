package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/atomicfile/fulldisk"
)

// logErrorResult is the part of a result that reports logging.
type logErrorResult struct {
	ExecutionID string `json:"execution_id"`
	Status      string `json:"status"`
	Stdout      string `json:"stdout"`
	LogError    string `json:"log_error"`
}

type searchWithLogError struct {
	logSearchOut
	LogError string `json:"log_error"`
}

// TestLogDirUnwritableAtStart starts the server with its log directory on a
// full, or read-only, disk: it serves, says on every result that the run
// was not logged and why, says why search cannot answer, and logs and finds
// new runs once the disk is writable again, without a restart.
func TestLogDirUnwritableAtStart(t *testing.T) {
	sameInEveryMode(t, "pins subprocess mode")
	tests := []struct {
		name        string
		spoil, heal func(*fulldisk.Disk)
		reason      string // in log_error
		indexReason string // in search's error
	}{
		{"full", (*fulldisk.Disk).Fill, (*fulldisk.Disk).Free, "no space left on device", "full"},
		{"read-only", func(d *fulldisk.Disk) { d.ReadOnly(true) }, func(d *fulldisk.Disk) { d.ReadOnly(false) },
			"read-only file system", "read-only file system"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := fulldisk.Mount(t, 2<<20)
			tc.spoil(d)
			s := start(t, "CODEXEC_LOG_DIR="+d.Dir, "CODEXEC_SANDBOX_MODE=subprocess")
			if !strings.Contains(s.Stderr.String(), "EXECUTION LOG UNAVAILABLE") {
				t.Errorf("no start-up warning in the server log:\n%s", tail(s.Stderr.String(), 2000))
			}
			lost := checkUnlogged(t, s, d.Dir, tc.reason, tc.indexReason)
			tc.heal(d)
			checkLoggedAgain(t, s, lost)
		})
	}
}

// checkUnlogged runs code on a server whose log cannot be written and
// checks what it says: the result's log_error, and search's and
// get_execution_log's LOG_UNAVAILABLE.
func checkUnlogged(t *testing.T, s *server, logDir, reason, indexReason string) logErrorResult {
	t.Helper()
	var lost logErrorResult
	res := s.callInto("execute_code", map[string]any{"language": "bash", "code": "echo degraded_run_ok"}, &lost)
	if lost.Status != "success" || lost.Stdout != "degraded_run_ok\n" {
		t.Fatalf("execute_code with an unwritable log: %+v %s", lost, text(res))
	}
	want := "execution log not written: " + reason + " (" + logDir + "/executions-"
	if !strings.HasPrefix(lost.LogError, want) || !strings.Contains(text(res), "log_error: "+want) {
		t.Errorf("log_error %q (text %q), want it to start with %q", lost.LogError, text(res), want)
	}
	code, msg := toolErrorCode(t, s, "search_execution_logs", map[string]any{"query": "degraded_run_ok"})
	t.Logf("log_error: %s\nsearch: %s %s", lost.LogError, code, msg)
	if code != "LOG_UNAVAILABLE" || !strings.Contains(msg, "execution log index unavailable") ||
		!strings.Contains(msg, indexReason) || !strings.Contains(msg, reason) {
		t.Errorf("search with an unwritable log: %s %q", code, msg)
	}
	if code, msg := toolErrorCode(t, s, "get_execution_log", map[string]any{"execution_id": lost.ExecutionID}); code != "LOG_UNAVAILABLE" {
		t.Errorf("get_execution_log with an unwritable log: %s %q", code, msg)
	}
	return lost
}

// checkLoggedAgain checks that, the log writable again, a new run is
// logged, found by search and readable, and the lost one is not there.
func checkLoggedAgain(t *testing.T, s *server, lost logErrorResult) {
	t.Helper()
	var kept logErrorResult
	s.callInto("execute_code", map[string]any{"language": "bash", "code": "echo recovered_run_ok"}, &kept)
	if kept.Status != "success" || kept.LogError != "" {
		t.Fatalf("execute_code once the log is writable again: %+v", kept)
	}
	var found searchWithLogError
	if res := s.callInto("search_execution_logs", map[string]any{"query": "echo"}, &found); res.IsError {
		t.Fatalf("search once the log is writable again: %s", text(res))
	}
	if diff := cmp.Diff([]string{kept.ExecutionID}, hitIDs(found.Results)); diff != "" || found.LogError != "" {
		t.Errorf("search once the log is writable again (-want +got):\n%s\nlog_error %q", diff, found.LogError)
	}
	var entry logOut
	if res := s.callInto("get_execution_log", map[string]any{"execution_id": kept.ExecutionID}, &entry); res.IsError || entry.Stdout != "recovered_run_ok\n" {
		t.Errorf("get_execution_log: %+v %s", entry, text(res))
	}
	if code, _ := toolErrorCode(t, s, "get_execution_log", map[string]any{"execution_id": lost.ExecutionID}); code != "EXECUTION_NOT_FOUND" {
		t.Errorf("the unlogged run: %s", code)
	}
}

// TestLogFillsWhileServing fills the log's disk under a running server: the
// run made while it is full says so, search still answers from the index
// but says new runs are missing, and nothing written before or after is
// lost.
func TestLogFillsWhileServing(t *testing.T) {
	sameInEveryMode(t, "pins subprocess mode")
	d := fulldisk.Mount(t, 4<<20)
	s := start(t, "CODEXEC_LOG_DIR="+d.Dir, "CODEXEC_SANDBOX_MODE=subprocess")
	var before logErrorResult
	s.callInto("execute_code", map[string]any{"language": "bash", "code": "echo before_full"}, &before)
	if before.LogError != "" {
		t.Fatalf("log_error with space: %q", before.LogError)
	}
	sess := s.startSession("python")
	d.Fill()
	// 64 KiB of output cannot fit in what is left of the file's last page.
	var during logErrorResult
	s.callInto("execute_code", map[string]any{"language": "bash", "code": "head -c 65536 /dev/zero | tr '\\0' x; echo during_full"}, &during)
	if !strings.Contains(during.LogError, "no space left on device") {
		t.Fatalf("run on a full disk: log_error %q", during.LogError)
	}
	var inSession logErrorResult
	s.callInto("send_to_session", map[string]any{"session_id": sess.SessionID, "code": "print('y' * 65536)"}, &inSession)
	if inSession.Status != "success" || !strings.Contains(inSession.LogError, "no space left on device ("+d.Dir+"/session-") {
		t.Errorf("session run on a full disk: status %s, log_error %q", inSession.Status, inSession.LogError)
	}
	var partial searchWithLogError
	res := s.call("search_execution_logs", map[string]any{"query": "echo"})
	if !res.IsError {
		decodeStructured(t, res, &partial)
		if !strings.Contains(partial.LogError, "no space left on device") {
			t.Errorf("search on a full disk answered without saying runs are missing: %+v", partial)
		}
	}
	d.Free()
	var after logErrorResult
	s.callInto("execute_code", map[string]any{"language": "bash", "code": "echo after_full"}, &after)
	if after.LogError != "" {
		t.Fatalf("log_error after space returned: %q", after.LogError)
	}
	var found logSearchOut
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.callInto("search_execution_logs", map[string]any{"query": "echo"}, &found)
		if len(found.Results) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if diff := cmp.Diff([]string{after.ExecutionID, before.ExecutionID}, hitIDs(found.Results)); diff != "" {
		t.Errorf("logged runs (-want +got):\n%s", diff)
	}
	checkWholeLines(t, d.Dir)
}

// checkWholeLines asserts that every line of every JSONL file in dir is a
// JSON value and that no file ends in a partial line.
func checkWholeLines(t *testing.T, dir string) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(paths) == 0 {
		t.Fatalf("no log files in %s", dir)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			t.Errorf("%s ends in a partial line", p)
		}
		for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			if len(b) > 0 && !json.Valid(line) {
				t.Errorf("%s line %d is not JSON: %.80q", p, i+1, line)
			}
		}
	}
}

// TestLogTornTailAtStart starts the server on a daily log whose last line a
// crash tore: the next run's entry starts on a line of its own, so both the
// entry before the crash and the new one are found, and the fragment stays
// a line of its own.
func TestLogTornTailAtStart(t *testing.T) {
	sameInEveryMode(t, "pins subprocess mode")
	dir := t.TempDir()
	now := time.Now().UTC()
	whole := fmt.Sprintf(`{"type":"execution","execution_id":"exec_before_crash","session_id":null,"language":"bash","code":"echo before_crash","stdout":"before_crash\n","stderr":"","exit_code":0,"status":"success","duration_ms":5,"executed_at":%q}`, now.Add(-time.Minute).Format(time.RFC3339Nano))
	torn := `{"type":"execution","execution_id":"exec_torn","session_id":null,"language":"bash","code":"echo to`
	path := filepath.Join(dir, "executions-"+now.Format("2006-01-02")+".jsonl")
	writeFile(t, path, whole+"\n"+torn)

	s := start(t, "CODEXEC_LOG_DIR="+dir, "CODEXEC_SANDBOX_MODE=subprocess")
	var r logErrorResult
	s.callInto("execute_code", map[string]any{"language": "bash", "code": "echo after_crash"}, &r)
	if r.Status != "success" || r.LogError != "" {
		t.Fatalf("run after the crash: %+v", r)
	}
	var found logSearchOut
	s.callInto("search_execution_logs", map[string]any{"query": "echo"}, &found)
	if diff := cmp.Diff([]string{r.ExecutionID, "exec_before_crash"}, hitIDs(found.Results)); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The run's one entry, on a line of its own.
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || lines[0] != whole || lines[1] != torn ||
		!strings.Contains(lines[2], r.ExecutionID) || !json.Valid([]byte(lines[2])) {
		t.Errorf("log file after the run:\n%s", b)
	}
}
