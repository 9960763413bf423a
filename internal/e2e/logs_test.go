package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type hitOut struct {
	ExecutionID  string  `json:"execution_id"`
	SessionID    *string `json:"session_id"`
	Language     string  `json:"language"`
	CodePreview  string  `json:"code_preview"`
	Status       string  `json:"status"`
	ExitCode     *int    `json:"exit_code"`
	ErrorPreview *string `json:"error_preview"`
	ExecutedAt   string  `json:"executed_at"`
}

type logSearchOut struct {
	Results    []hitOut `json:"results"`
	TotalCount int      `json:"total_count"`
}

type logOut struct {
	ExecutionID      string   `json:"execution_id"`
	SessionID        *string  `json:"session_id"`
	Tool             string   `json:"tool"`
	ScriptName       string   `json:"script_name"`
	Language         string   `json:"language"`
	Code             string   `json:"code"`
	Args             []string `json:"args"`
	Stdout           string   `json:"stdout"`
	Status           string   `json:"status"`
	ExitCode         *int     `json:"exit_code"`
	ArtifactsCreated []string `json:"artifacts_created"`
	SandboxMode      string   `json:"sandbox_mode"`
}

func hitIDs(h []hitOut) []string {
	out := []string{}
	for _, x := range h {
		out = append(out, x.ExecutionID)
	}
	return out
}

func TestLogsSearchAndGet(t *testing.T) {
	sameInEveryMode(t, "the execution log store")
	logDir := t.TempDir()
	yesterday := time.Now().UTC().Add(-24 * time.Hour)
	// History written before start-up: a seed-000 style session file and a
	// daily file whose last line was torn by a crash.
	session := fmt.Sprintf(`{"type":"session_start","session_id":"sess_hand","language":"python","pid":1,"started_at":%[1]q}
{"type":"package_install","session_id":"sess_hand","package":"pandas","version":"2.2.1","success":true,"at":%[1]q}
{"type":"execution","execution_id":"exec_sess1","session_id":"sess_hand","code":"df = make_frame()","stdout":"frame_ok\n","stderr":"","exit_code":0,"duration_ms":234,"at":%[1]q}
`, yesterday.Add(-time.Minute).Format(time.RFC3339))
	writeFile(t, filepath.Join(logDir, "session-sess_hand.jsonl"), session)
	daily := fmt.Sprintf(`{"type":"execution","execution_id":"exec_before_crash","session_id":null,"language":"bash","code":"echo survived","stdout":"survived\n","stderr":"","exit_code":0,"status":"success","duration_ms":5,"executed_at":%[1]q}
{"type":"execution","execution_id":"exec_torn","session_id":null,"language":"bash","code":"echo to`, yesterday.Format(time.RFC3339Nano))
	writeFile(t, filepath.Join(logDir, "executions-"+yesterday.Format("2006-01-02")+".jsonl"), daily)

	s := start(t, "CODEXEC_LOG_DIR="+logDir)
	fail, _ := s.exec(map[string]any{"language": "python", "code": "import codexec_missing_mod"})
	ok, _ := s.exec(map[string]any{"language": "node", "code": "console.log('needle_value ' + 42)"})
	slow, _ := s.exec(map[string]any{"language": "bash", "code": "sleep 5", "timeout_ms": 300})
	if fail.Status != "execution_error" || ok.Status != "success" || slow.Status != "timeout" {
		t.Fatalf("setup statuses: %s %s %s", fail.Status, ok.Status, slow.Status)
	}
	s.call("save_script", map[string]any{"name": "argv", "language": "bash", "code": `echo "got $1"`})
	sr, _ := s.runScript(map[string]any{"name": "argv", "args": []string{"one"}})

	today := time.Now().UTC().Format("2006-01-02")
	cases := []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{}, []string{sr.ExecutionID, slow.ExecutionID, ok.ExecutionID, fail.ExecutionID, "exec_before_crash", "exec_sess1"}},
		{map[string]any{"language": "python"}, []string{fail.ExecutionID, "exec_sess1"}},
		{map[string]any{"language": "javascript"}, []string{ok.ExecutionID}},
		{map[string]any{"status": "failed"}, []string{fail.ExecutionID}},
		{map[string]any{"status": "timeout"}, []string{slow.ExecutionID}},
		{map[string]any{"status": "success", "language": "bash"}, []string{sr.ExecutionID, "exec_before_crash"}},
		{map[string]any{"query": "needle_value"}, []string{ok.ExecutionID}},
		{map[string]any{"query": "codexec_missing_mod"}, []string{fail.ExecutionID}},
		{map[string]any{"query": "frame_ok"}, []string{"exec_sess1"}},
		{map[string]any{"since": today}, []string{sr.ExecutionID, slow.ExecutionID, ok.ExecutionID, fail.ExecutionID}},
	}
	for _, c := range cases {
		var out logSearchOut
		res := s.callInto("search_execution_logs", c.args, &out)
		if diff := cmp.Diff(c.want, hitIDs(out.Results)); diff != "" || out.TotalCount != len(c.want) {
			t.Errorf("search %v total %d (-want +got)\n%s%s", c.args, out.TotalCount, diff, text(res))
		}
	}
	var out logSearchOut
	s.callInto("search_execution_logs", map[string]any{"limit": 2}, &out)
	if len(out.Results) != 2 || out.TotalCount != 6 {
		t.Errorf("limit: %d results, total %d", len(out.Results), out.TotalCount)
	}
	s.callInto("search_execution_logs", map[string]any{"status": "failed"}, &out)
	if h := out.Results[0]; h.ErrorPreview == nil || !strings.Contains(*h.ErrorPreview, "ModuleNotFoundError") || h.CodePreview != "import codexec_missing_mod" {
		t.Errorf("previews: %+v", h)
	}
	for _, bad := range []map[string]any{{"status": "broken"}, {"since": "yesterday"}, {"language": "cobol"}} {
		if res := s.call("search_execution_logs", bad); !res.IsError {
			t.Errorf("%v accepted", bad)
		}
	}

	var lg logOut
	s.callInto("get_execution_log", map[string]any{"execution_id": ok.ExecutionID}, &lg)
	if lg.Stdout != "needle_value 42\n" || lg.Language != "node" || lg.Tool != "execute_code" || lg.SessionID != nil || lg.Status != "success" {
		t.Errorf("get one-shot: %+v", lg)
	}
	s.callInto("get_execution_log", map[string]any{"execution_id": sr.ExecutionID}, &lg)
	if lg.Tool != "run_script" || lg.ScriptName != "argv" || !cmp.Equal(lg.Args, []string{"one"}) || lg.Stdout != "got one\n" {
		t.Errorf("get run_script: %+v", lg)
	}
	s.callInto("get_execution_log", map[string]any{"execution_id": "exec_sess1"}, &lg)
	if lg.SessionID == nil || *lg.SessionID != "sess_hand" || lg.Language != "python" || lg.Code != "df = make_frame()" || lg.Status != "success" {
		t.Errorf("get session entry: %+v", lg)
	}
	if res := s.call("get_execution_log", map[string]any{"execution_id": "exec_torn"}); !res.IsError {
		t.Errorf("torn line returned")
	}
	if !strings.Contains(s.Stderr.String(), "incomplete last line") {
		t.Errorf("no warning for the torn line")
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLogsCrashRecovery kills the server with SIGKILL while it logs
// executions and saves scripts in a loop, restarts it on the same data, and
// checks that everything acknowledged before the kill is readable and that
// the index agrees with the JSONL files.
func TestLogsCrashRecovery(t *testing.T) {
	data := t.TempDir()
	s := start(t, "CODEXEC_DATA_DIR="+data)
	var mu sync.Mutex
	var execIDs, scriptNames []string
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				code := fmt.Sprintf("echo w%d-%d", w, i)
				res, err := s.Session.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"language": "bash", "code": code}})
				if err != nil {
					return
				}
				var r execResult
				b, _ := json.Marshal(res.StructuredContent)
				_ = json.Unmarshal(b, &r)
				name := fmt.Sprintf("s-%d-%d", w, i)
				res, err = s.Session.CallTool(ctx, &mcp.CallToolParams{Name: "save_script", Arguments: map[string]any{"name": name, "language": "bash", "code": code}})
				mu.Lock()
				execIDs = append(execIDs, r.ExecutionID)
				if err == nil && !res.IsError {
					scriptNames = append(scriptNames, name)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(scriptNames)
		mu.Unlock()
		if n >= 20 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.Cmd.Process.Kill(); err != nil { // SIGKILL of the server we started
		t.Fatal(err)
	}
	cancel()
	wg.Wait()
	_ = s.Session.Close() // reaps the killed process (the transport owns Cmd.Wait)
	mu.Lock()
	defer mu.Unlock()
	if len(scriptNames) < 20 {
		t.Fatalf("only %d saves before the deadline", len(scriptNames))
	}

	s2 := start(t, "CODEXEC_DATA_DIR="+data)
	for _, id := range execIDs {
		var lg logOut
		if res := s2.callInto("get_execution_log", map[string]any{"execution_id": id}, &lg); res.IsError || lg.ExecutionID != id {
			t.Errorf("execution %s lost: %s", id, text(res))
		}
	}
	for _, n := range scriptNames {
		var got scriptOut
		if res := s2.callInto("get_script", map[string]any{"name": n}, &got); res.IsError || !strings.HasPrefix(got.Code, "echo w") {
			t.Errorf("script %s lost: %s", n, text(res))
		}
	}
	var ls listOut
	s2.callInto("list_scripts", map[string]any{}, &ls)
	if ls.TotalCount < len(scriptNames) {
		t.Errorf("list has %d scripts, %d were saved", ls.TotalCount, len(scriptNames))
	}
	var idx struct {
		Scripts []struct{ Name string } `json:"scripts"`
	}
	b, _ := os.ReadFile(filepath.Join(data, "scripts", "index.json"))
	if err := json.Unmarshal(b, &idx); err != nil || len(idx.Scripts) != ls.TotalCount {
		t.Errorf("index.json (%d scripts, %v) disagrees with list_scripts (%d)", len(idx.Scripts), err, ls.TotalCount)
	}
	var out logSearchOut
	s2.callInto("search_execution_logs", map[string]any{"limit": 200}, &out)
	onDisk := countExecutions(t, filepath.Join(data, "logs"))
	if out.TotalCount != len(onDisk) {
		t.Errorf("index has %d executions, files have %d", out.TotalCount, len(onDisk))
	}
	for _, h := range out.Results {
		if !onDisk[h.ExecutionID] {
			t.Errorf("index lists %s which no file has", h.ExecutionID)
		}
	}
	t.Logf("killed after %d acknowledged executions and %d saves; %d executions on disk", len(execIDs), len(scriptNames), len(onDisk))
}

// countExecutions reads the JSONL files directly: complete lines of type
// execution, keyed by id.
func countExecutions(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["type"] == "execution" {
				out[m["execution_id"].(string)] = true
			}
		}
		_ = fh.Close()
	}
	return out
}

// TestLogsRetentionAtStartup starts the server on history older than the
// retention windows: expired entries disappear from files and search.
func TestLogsRetentionAtStartup(t *testing.T) {
	sameInEveryMode(t, "the execution log store")
	logDir := t.TempDir()
	old := time.Now().UTC().AddDate(0, 0, -40)
	line := func(id, status string, code int) string {
		return fmt.Sprintf(`{"type":"execution","execution_id":%q,"session_id":null,"language":"bash","code":"x","stdout":"","stderr":"","exit_code":%d,"status":%q,"duration_ms":1,"executed_at":%q}`+"\n",
			id, code, status, old.Format(time.RFC3339Nano))
	}
	oldFile := filepath.Join(logDir, "executions-"+old.Format("2006-01-02")+".jsonl")
	writeFile(t, oldFile, line("exec_old_ok", "success", 0)+line("exec_old_bad", "execution_error", 1))
	s := start(t, "CODEXEC_LOG_DIR="+logDir)
	deadline := time.Now().Add(10 * time.Second)
	var out logSearchOut
	for {
		s.callInto("search_execution_logs", map[string]any{}, &out)
		if len(out.Results) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if diff := cmp.Diff([]string{"exec_old_bad"}, hitIDs(out.Results)); diff != "" {
		t.Errorf("after retention (-want +got)\n%s", diff)
	}
	b, _ := os.ReadFile(oldFile)
	if strings.Contains(string(b), "exec_old_ok") || !strings.Contains(string(b), "exec_old_bad") {
		t.Errorf("daily file not rewritten: %s", b)
	}
}
