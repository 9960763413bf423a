package recovery

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/inflight"
	"github.com/codexec/codexec/internal/instance"
)

// logLines decodes every line of a log file as a map.
func logLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}

// TestCloseLeftovers plays a server that is killed with a one-shot run and
// a session run in flight, a live session and directories, and checks what
// the next start logs and removes.
func TestCloseLeftovers(t *testing.T) {
	logDir, sandboxDir, outside := t.TempDir(), t.TempDir(), t.TempDir()
	lg, err := execlog.New(logDir)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	j, err := inflight.Open(JournalDir(logDir))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	sess := "sess_1"
	sessFile := execlog.SessionFile(sess)
	j.SessionStarted(inflight.Session{ID: sess, LogFile: sessFile, StartedAt: at})
	oneShot := execlog.Started{ExecutionID: "exec_a", Language: "bash", Code: "sleep 300", Tool: "execute_code", ExecutedAt: at}
	inSession := execlog.Started{ExecutionID: "exec_b", SessionID: &sess, Language: "python", Code: "while True: pass", ExecutedAt: at}
	ended := execlog.Started{ExecutionID: "exec_c", SessionID: &sess, Language: "python", Code: "1", ExecutedAt: at}
	for _, r := range []struct {
		s       execlog.Started
		session string
	}{{oneShot, ""}, {inSession, sessFile}, {ended, sessFile}} {
		j.RunStarted(r.s.ExecutionID, r.session, r.s)
	}
	j.RunEnded("exec_c", sessFile)
	ws := filepath.Join(sandboxDir, "exec_ws")
	for _, d := range []string{ws, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		j.DirCreated(d)
	}
	gone := exec.Command("true")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	dead := instance.Of(gone.Process.Pid)
	_ = gone.Wait()
	self := filepath.Join(JournalDir(logDir), instance.Self()+".journal")
	if err := os.Rename(self, filepath.Join(JournalDir(logDir), dead+".journal")); err != nil {
		t.Fatal(err)
	}

	CloseLeftovers(JournalDir(logDir), lg, sandboxDir)

	type line struct{ Type, ID, Status, Reason string }
	pick := func(m map[string]any) line {
		s := func(k string) string { v, _ := m[k].(string); return v }
		id := s("execution_id")
		if id == "" {
			id = s("session_id")
		}
		return line{s("type"), id, s("status"), s("reason")}
	}
	var got []line
	for _, f := range []string{execlog.DailyFile(at), sessFile} {
		for _, m := range logLines(t, filepath.Join(logDir, f)) {
			got = append(got, pick(m))
			if m["type"] == "session_end" && m["executions_count"] != float64(2) {
				t.Errorf("session_end executions_count = %v, want 2 (one ended, one lost)", m["executions_count"])
			}
		}
	}
	want := []line{
		{"execution", "exec_a", "lost", ""},
		{"execution", "exec_b", "lost", ""},
		{"session_end", sess, "", "server_restart"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("log lines written at the next start (-want +got):\n%s", d)
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Errorf("workspace of the dead server left: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("a directory outside the sandbox dir was removed: %v", err)
	}
	if ents, _ := os.ReadDir(JournalDir(logDir)); len(ents) != 0 {
		t.Errorf("journal left after recovery: %v", ents)
	}
}
