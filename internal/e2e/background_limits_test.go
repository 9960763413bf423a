package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolError is the {"error","code"} of a failed call.
func toolError(t testing.TB, res *mcp.CallToolResult) (code, msg string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want an error, got %s", text(res))
	}
	var e struct{ Error, Code string }
	if err := json.Unmarshal([]byte(text(res)), &e); err != nil {
		t.Fatalf("error text %q: %v", text(res), err)
	}
	return e.Code, e.Error
}

// structured decodes a result's structured content into a map.
func structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	var m map[string]any
	decodeStructured(t, res, &m)
	return m
}

// TestBackgroundRunOwnedByPrincipal: another principal's get_run and
// cancel_run of a run read exactly like those of an id nobody used, cancel
// nothing, and list_runs shows each principal only its own runs.
func TestBackgroundRunOwnedByPrincipal(t *testing.T) {
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t))
	alice, bob := s.mustConnect(aliceToken), s.mustConnect(bobToken)
	id := startBackground(t, alice, "execute_code", map[string]any{"language": "bash", "code": "echo alice-secret; sleep 60"})
	ghost := "exec_" + strings.Repeat("0", len(id)-len("exec_"))
	for _, name := range []string{"get_run", "cancel_run"} {
		got := callTool(t, bob, name, map[string]any{"execution_id": id})
		want := callTool(t, bob, name, map[string]any{"execution_id": ghost})
		code, _ := toolError(t, got)
		if code != "EXECUTION_NOT_FOUND" || text(got) != strings.ReplaceAll(text(want), ghost, id) {
			t.Errorf("bob's %s of alice's run: %s (unknown id: %s)", name, text(got), text(want))
		}
	}
	if runs := structured(t, callTool(t, bob, "list_runs", nil))["runs"].([]any); len(runs) != 0 {
		t.Errorf("bob lists alice's runs: %v", runs)
	}
	mine := structured(t, callTool(t, alice, "list_runs", nil))["runs"].([]any)
	if len(mine) != 1 || mine[0].(map[string]any)["execution_id"] != id || mine[0].(map[string]any)["status"] != "running" {
		t.Errorf("alice's list_runs: %v", mine)
	}
	if v := getRun(t, alice, id, 0, 0, 5000); v.Status != "running" || !strings.Contains(v.Stdout, "alice-secret") {
		t.Errorf("alice's run after bob's cancel_run: %+v", v)
	}
	callTool(t, alice, "cancel_run", map[string]any{"execution_id": id})
}

// TestBackgroundRunHoldsAnExecutionSlot: a background run counts against
// CODEXEC_MAX_CONCURRENT until it ends, so with one slot a second run of
// the same principal, foreground or background, is busy until the first is
// cancelled; CODEXEC_BACKGROUND_MAX_RUNS bounds the runs kept, dropping the
// oldest ended one from the list (get_run still reads it).
func TestBackgroundRunHoldsAnExecutionSlot(t *testing.T) {
	s := startHTTP(t, "", "CODEXEC_MAX_CONCURRENT=1", "CODEXEC_QUEUE_WAIT_MS=300", "CODEXEC_BACKGROUND_MAX_RUNS=2")
	cs := s.mustConnect("")
	sleeper := map[string]any{"language": "bash", "code": "sleep 60"}
	first := startBackground(t, cs, "execute_code", sleeper)
	for _, args := range []map[string]any{
		{"language": "bash", "code": "echo hi"},
		{"language": "bash", "code": "echo hi", "background": true},
	} {
		if code, msg := toolError(t, callTool(t, cs, "execute_code", args)); code != "BUSY" || !strings.Contains(msg, "CODEXEC_MAX_CONCURRENT=1") {
			t.Errorf("a second run while the background one holds the slot: %s %s", code, msg)
		}
	}
	callTool(t, cs, "cancel_run", map[string]any{"execution_id": first})
	res := callTool(t, cs, "execute_code", map[string]any{"language": "bash", "code": "echo hi"})
	if res.IsError || structured(t, res)["status"] != "success" {
		t.Fatalf("a run after cancel_run freed the slot: %s", text(res))
	}

	// Two runs kept: a third start drops the oldest ended one.
	second := startBackground(t, cs, "execute_code", map[string]any{"language": "bash", "code": "echo second"})
	(&reader{id: second}).untilEnd(t, cs, time.Minute)
	third := startBackground(t, cs, "execute_code", map[string]any{"language": "bash", "code": "echo third"})
	(&reader{id: third}).untilEnd(t, cs, time.Minute)
	var listed []string
	for _, r := range structured(t, callTool(t, cs, "list_runs", nil))["runs"].([]any) {
		listed = append(listed, r.(map[string]any)["execution_id"].(string))
	}
	if diff := cmp.Diff([]string{third, second}, listed); diff != "" {
		t.Errorf("list_runs, newest first, at most 2 (-want +got):\n%s", diff)
	}
	if v := getRun(t, cs, first, 0, 0, 0); v.Status != "cancelled" {
		t.Errorf("the dropped run, read from the store: %+v", v)
	}
}

// TestBackgroundRunLimit: with all CODEXEC_BACKGROUND_MAX_RUNS runs of a
// principal running, another start is refused with LIMIT_EXCEEDED.
func TestBackgroundRunLimit(t *testing.T) {
	s := startHTTP(t, "", "CODEXEC_BACKGROUND_MAX_RUNS=1")
	cs := s.mustConnect("")
	id := startBackground(t, cs, "execute_code", map[string]any{"language": "bash", "code": "sleep 60"})
	res := callTool(t, cs, "execute_code", map[string]any{"language": "bash", "code": "echo hi", "background": true})
	if code, msg := toolError(t, res); code != "LIMIT_EXCEEDED" || !strings.Contains(msg, "CODEXEC_BACKGROUND_MAX_RUNS=1") {
		t.Errorf("a start past the bound: %s %s", code, msg)
	}
	// Cancelled right after it started, while it may still be entering its
	// sandbox: it ends at once all the same.
	if v := structured(t, callTool(t, cs, "cancel_run", map[string]any{"execution_id": id})); v["status"] != "cancelled" {
		t.Fatalf("cancel_run right after the start: %v", v)
	}
	startBackground(t, cs, "execute_code", map[string]any{"language": "bash", "code": "echo hi"})
}

// TestBackgroundRunTimeoutCap: a background run's timeout is capped (and
// defaulted) by CODEXEC_BACKGROUND_MAX_TIMEOUT_MS, not by the foreground's
// CODEXEC_MAX_TIMEOUT_MS, and a run past it ends as a timeout.
func TestBackgroundRunTimeoutCap(t *testing.T) {
	s := startHTTP(t, "", "CODEXEC_MAX_TIMEOUT_MS=1000", "CODEXEC_DEFAULT_TIMEOUT_MS=1000", "CODEXEC_BACKGROUND_MAX_TIMEOUT_MS=3000",
		"ALLOWED_COMMANDS=sleep")
	cs := s.mustConnect("")
	for _, c := range []struct {
		args    map[string]any
		setting string
	}{
		{map[string]any{"language": "bash", "code": "true", "timeout_ms": 2000}, "CODEXEC_MAX_TIMEOUT_MS"},
		{map[string]any{"language": "bash", "code": "true", "timeout_ms": 3001, "background": true}, "CODEXEC_BACKGROUND_MAX_TIMEOUT_MS"},
	} {
		if code, msg := toolError(t, callTool(t, cs, "execute_code", c.args)); code != "INVALID_PARAMS" || !strings.Contains(msg, c.setting) {
			t.Errorf("%v: %s %s", c.args, code, msg)
		}
	}
	over := startBackground(t, cs, "execute_code", map[string]any{"language": "bash", "code": "sleep 1.5; echo beyond", "timeout_ms": 2500})
	capped := startBackground(t, cs, "execute_command", map[string]any{"command": "sleep 30"})
	ro := &reader{id: over}
	if v := ro.untilEnd(t, cs, time.Minute); v.Status != "success" || ro.stdout.String() != "beyond\n" {
		t.Errorf("a background run longer than the foreground cap: %+v, stdout %q", v, ro.stdout.String())
	}
	v := (&reader{id: capped}).untilEnd(t, cs, time.Minute)
	var res struct {
		Status       string `json:"status"`
		TimedOut     bool   `json:"timed_out"`
		ErrorMessage string `json:"error_message"`
	}
	_ = json.Unmarshal(v.Result, &res)
	if v.Status != "timeout" || !res.TimedOut || !strings.Contains(res.ErrorMessage, "3 seconds") {
		t.Errorf("a background run without timeout_ms, past the cap: %+v %s", v, v.Result)
	}
}

// TestBackgroundRunOffsetsAndWait reads a run that prints 40,000 bytes of
// two-byte characters and 20,001 of stderr at once, then after a pause one
// more line: answers are bounded and cut on whole characters, the offsets
// join them without gap or overlap, wait_ms returns at the new line or
// after the wait with nothing, and the ended run reads the same from the
// store.
func TestBackgroundRunOffsetsAndWait(t *testing.T) {
	s := startHTTP(t, "")
	cs := s.mustConnect("")
	code := "import sys, time\nsys.stdout.write('é' * 20000); sys.stdout.flush()\n" +
		"sys.stderr.write('x' * 20000 + '\\n'); sys.stderr.flush()\ntime.sleep(4)\nprint('done', flush=True)\n"
	id := startBackground(t, cs, "execute_code", map[string]any{"language": "python", "code": code})
	wantOut, wantErr := strings.Repeat("é", 20000), strings.Repeat("x", 20000)+"\n"
	r := &reader{id: id}
	waitFor(t, 30*time.Second, "the first burst", func() bool {
		v := r.step(t, cs, 2000)
		if len(v.Stdout) > 16<<10 || len(v.Stderr) > 16<<10 || !utf8.ValidString(v.Stdout) {
			t.Fatalf("an answer of %d+%d bytes (valid UTF-8: %v)", len(v.Stdout), len(v.Stderr), utf8.ValidString(v.Stdout))
		}
		return r.stdout.Len() == len(wantOut) && r.stderr.Len() == len(wantErr)
	})
	start := time.Now()
	if v := r.step(t, cs, 500); v.Stdout != "" || v.Status != "running" || time.Since(start) < 450*time.Millisecond {
		t.Errorf("wait_ms 500 while the program sleeps: %+v after %v", v, time.Since(start))
	}
	start = time.Now()
	if v := r.step(t, cs, 20000); v.Stdout != "done\n" || time.Since(start) > 15*time.Second {
		t.Errorf("wait_ms 20000 for the last line: %+v after %v", v, time.Since(start))
	}
	end := r.untilEnd(t, cs, time.Minute)
	if r.stdout.String() != wantOut+"done\n" || r.stderr.String() != wantErr || end.Status != "success" {
		t.Errorf("read by offsets: %d bytes of stdout, %d of stderr, status %s", r.stdout.Len(), r.stderr.Len(), end.Status)
	}
	again := &reader{id: id}
	again.untilEnd(t, cs, time.Minute)
	if again.stdout.String() != r.stdout.String() || again.stderr.String() != r.stderr.String() {
		t.Errorf("the ended run read again from offset 0 differs")
	}
	past := getRun(t, cs, id, 1<<40, 0, 0)
	if past.Stdout != "" || past.NextStdoutOffset != int64(len(wantOut)+5) {
		t.Errorf("an offset past the end: %+v", past)
	}
	if code, _ := toolError(t, callTool(t, cs, "get_run", map[string]any{"execution_id": id, "stdout_offset": -1})); code != "INVALID_PARAMS" {
		t.Errorf("a negative offset: %s", code)
	}
}

// TestBackgroundRunLostAtRestart kills the server (SIGKILL) while a
// background run runs and starts a new one on the same data directory: the
// run is reported lost (never run again), and a run that ended before the
// kill is read whole from the store.
func TestBackgroundRunLostAtRestart(t *testing.T) {
	data := t.TempDir()
	s := startHTTP(t, "", "CODEXEC_DATA_DIR="+data)
	cs := s.mustConnect("")
	done := startBackground(t, cs, "execute_code", map[string]any{"language": "bash", "code": "echo kept"})
	(&reader{id: done}).untilEnd(t, cs, time.Minute)
	mark := "lost-marker-" + time.Now().Format("150405.000000")
	running := startBackground(t, cs, "execute_code", map[string]any{"language": "bash", "code": "echo " + mark + "; sleep 300"})
	getRun(t, cs, running, 0, 0, 5000)
	if err := s.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.exited

	s2 := startHTTP(t, "", "CODEXEC_DATA_DIR="+data)
	cs2 := s2.mustConnect("")
	v := getRun(t, cs2, running, 0, 0, 0)
	if v.Status != "lost" || v.Tool != "execute_code" || !strings.Contains(v.ErrorMessage, "server stopped") {
		t.Errorf("the run the killed server left: %+v", v)
	}
	if pids := processesWith(mark); len(pids) != 0 {
		t.Errorf("the lost run's program still runs: %v", pids)
	}
	k := getRun(t, cs2, done, 0, 0, 0)
	var res struct{ Status, Stdout string }
	_ = json.Unmarshal(k.Result, &res)
	if k.Status != "success" || k.Stdout != "kept\n" || res.Stdout != "kept\n" {
		t.Errorf("the run that ended before the kill: %+v", k)
	}
	time.Sleep(time.Second) // nothing runs it again
	if again := getRun(t, cs2, running, 0, 0, 0); again.Status != "lost" {
		t.Errorf("the lost run later: %+v", again)
	}
	if _, err := os.Stat(data); err != nil {
		t.Fatal(err)
	}
}

// TestBackgroundRunResultEqualsForeground runs the same code in the
// foreground and in the background, for execute_code, run_script and
// execute_command: get_run's result is the foreground call's structured
// result but for the execution id and the times.
func TestBackgroundRunResultEqualsForeground(t *testing.T) {
	s := startHTTP(t, "", "ALLOWED_COMMANDS=*")
	cs := s.mustConnect("")
	py := "import sys\nprint('out')\nprint('err', file=sys.stderr)\nopen('art.txt', 'w').write('x')\nsys.exit(3)\n"
	callTool(t, cs, "save_script", map[string]any{"name": "bg-same", "language": "python", "code": py})
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"execute_code", map[string]any{"language": "python", "code": py}},
		{"run_script", map[string]any{"name": "bg-same", "args": []any{"a"}}},
		{"execute_command", map[string]any{"command": "echo out; echo err >&2; exit 2"}},
		{"execute_process", map[string]any{"file": "bash", "args": []any{"-c", "echo out; exit 4"}}},
	} {
		t.Run(c.tool, func(t *testing.T) {
			fg := structured(t, callTool(t, cs, c.tool, c.args))
			id := startBackground(t, cs, c.tool, c.args)
			v := (&reader{id: id}).untilEnd(t, cs, time.Minute)
			var bg map[string]any
			if err := json.Unmarshal(v.Result, &bg); err != nil {
				t.Fatal(err)
			}
			if bg["execution_id"] != id || v.Tool != c.tool {
				t.Errorf("background result of %s: %v", id, bg)
			}
			for _, m := range []map[string]any{fg, bg} {
				// usage is each run's own measurement (peak memory, and
				// processes only where the run had a new cgroup).
				for _, k := range []string{"execution_id", "duration_ms", "execution_time", "cwd", "usage"} {
					delete(m, k)
				}
			}
			if diff := cmp.Diff(fg, bg); diff != "" {
				t.Errorf("background result differs from the foreground one (-fg +bg):\n%s", diff)
			}
		})
	}
	// The background runs' artifacts are kept as any run's; their stored
	// results are not files of the caller's.
	var kept []string
	for _, e := range structured(t, callTool(t, cs, "list_files", nil))["entries"].([]any) {
		kept = append(kept, e.(map[string]any)["path"].(string))
	}
	arts, runsListed := 0, 0
	for _, p := range kept {
		if strings.HasSuffix(p, "/art.txt") {
			arts++
		}
		if strings.HasPrefix(p, "run_") {
			runsListed++
		}
	}
	if arts != 4 || runsListed != 0 {
		t.Errorf("list_files: %v; want the four runs' art.txt and no run_ item", kept)
	}
}

// TestBackgroundRunTasksOnlyWhereDeclared: a client of a revision before
// MCP Tasks (2025-06-18) is offered no tasks capability; a tasks/get it
// sends anyway is answered from the runs like any other, here an unknown
// id in the words of an unknown run (docs/tasks.md).
func TestBackgroundRunTasksOnlyWhereDeclared(t *testing.T) {
	s := startHTTP(t, "")
	_, body, hdr := do(t, "POST", s.URL+"/mcp", initBody, mcpHeaders(nil))
	sid := hdr.Get("Mcp-Session-Id")
	if sid == "" || strings.Contains(body, `"tasks"`) {
		t.Fatalf("initialize: session %q, %s", sid, body)
	}
	h := mcpHeaders(map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"})
	do(t, "POST", s.URL+"/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h)
	code, body, _ := do(t, "POST", s.URL+"/mcp", `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"exec_0"}}`, h)
	t.Logf("tasks/get: HTTP %d %s", code, body)
	if code != 200 || !strings.Contains(body, `"code":-32602`) || !strings.Contains(body, "not found") {
		t.Errorf("tasks/get of an unknown id: HTTP %d %s, want a JSON-RPC -32602 saying it is not found", code, body)
	}
}

// TestBackgroundRunCancelledAtShutdown: a stdio client that leaves ends its
// server; the background runs still going are cancelled like running calls
// (a stdio client that closed its input gets no grace), their results say
// why and are kept, so the next server on the data directory reads them.
func TestBackgroundRunCancelledAtShutdown(t *testing.T) {
	data := t.TempDir()
	s := start(t, "CODEXEC_DATA_DIR="+data)
	id := startBackground(t, s.Session, "execute_code", map[string]any{"language": "bash", "code": "echo before; sleep 60"})
	getRun(t, s.Session, id, 0, 0, 5000)
	t0 := time.Now()
	if err := s.Session.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Errorf("the server took %v to exit", d)
	}
	s2 := start(t, "CODEXEC_DATA_DIR="+data)
	r := &reader{id: id}
	v := r.untilEnd(t, s2.Session, time.Minute)
	var res struct {
		Status       string `json:"status"`
		ErrorMessage string `json:"error_message"`
	}
	_ = json.Unmarshal(v.Result, &res)
	if v.Status != "cancelled" || r.stdout.String() != "before\n" || !strings.Contains(res.ErrorMessage, "server shut down") {
		t.Errorf("after the shutdown: %+v %s, output %q", v, v.Result, r.stdout.String())
	}
}
