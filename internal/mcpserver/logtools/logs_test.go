package logtools_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/mcpserver/logtools"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/mcpserver/tooltest"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxfake"
)

// byCode is a script that answers as the code would: code containing
// "fail" writes it to stderr and exits 3, anything else prints its code.
func byCode(spec sandbox.Spec) sandboxfake.Outcome {
	code := tooltest.Program(spec)
	if strings.Contains(code, "fail") {
		return sandboxfake.Outcome{Stderr: code + "\n", Exit: sandbox.Exit{Code: 3}}
	}
	return sandboxfake.Outcome{Stdout: code + "\n"}
}

// history is a real execution log and its index in a temporary directory,
// filled by an engine on the fake backend, served by the logs toolset.
type history struct {
	cs     *mcp.ClientSession
	engine *engine.Engine
}

// serveLogs serves the logs toolset over an index at dbPath ("": beside
// the log, as the server keeps it).
func serveLogs(t *testing.T, dbPath string) *history {
	t.Helper()
	dir := t.TempDir()
	log, err := execlog.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = log.Close() })
	if dbPath == "" {
		dbPath = filepath.Join(dir, logindex.FileName)
	}
	idx := logindex.New(dir, dbPath)
	t.Cleanup(func() { _ = idx.Close() })
	log.OnAppend(func(file string, _ int64, _ []byte) { idx.Notify(file) })
	b := sandboxfake.New(byCode, true)
	e := tooltest.EngineWith(t, engine.Deps{Backend: b, Languages: tooltest.Languages(), Log: log}, tooltest.EngineOptions(t))
	srv := mcp.NewServer(&mcp.Implementation{Name: "logtools-test", Version: "0"}, nil)
	logtools.Register(tool.NewRegistrar(srv), logtools.Deps{Logs: idx, ExecLog: log})
	return &history{cs: tooltest.Connect(t, srv), engine: e}
}

// run executes code through the engine, which logs it, and returns its id.
// Runs start at least 2 ms apart: the log keeps start times to the
// millisecond, and "newest first" orders by them.
func (h *history) run(t *testing.T, lang, code string) string {
	t.Helper()
	time.Sleep(2 * time.Millisecond)
	res, err := h.engine.Execute(context.Background(), engine.Request{Language: lang, Code: code, Tool: "execute_code"})
	if err != nil {
		t.Fatal(err)
	}
	return res.ExecutionID
}

// TestSearchExecutionLogs: searches over real logged runs find them by
// words, language, status and date, newest first.
func TestSearchExecutionLogs(t *testing.T) {
	h := serveLogs(t, "")
	alpha := h.run(t, "python", "print('alpha')")
	failed := h.run(t, "bash", "echo fail; exit 3")
	both := h.run(t, "python", "print('alpha beta')")
	for _, tc := range []struct {
		name string
		args map[string]any
		want []string
	}{
		{"everything, newest first", map[string]any{}, []string{both, failed, alpha}},
		{"all words", map[string]any{"query": "alpha beta"}, []string{both}},
		{"one word", map[string]any{"query": "alpha"}, []string{both, alpha}},
		{"language", map[string]any{"language": "bash"}, []string{failed}},
		{"status", map[string]any{"status": "failed"}, []string{failed}},
		{"limit", map[string]any{"limit": 1}, []string{both}},
		{"since tomorrow", map[string]any{"since": "2999-01-01"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out logtools.SearchLogsOut
			tooltest.Decode(t, tooltest.Call(t, h.cs, "search_execution_logs", tc.args), &out)
			var got []string
			for _, hit := range out.Results {
				got = append(got, hit.ExecutionID)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("hits (-want +got)\n%s", diff)
			}
		})
	}
}

// TestGetExecutionLog: an execution's full entry is what the run did.
func TestGetExecutionLog(t *testing.T) {
	h := serveLogs(t, "")
	id := h.run(t, "bash", "echo fail; exit 3")
	var got logtools.GetLogOut
	res := tooltest.Call(t, h.cs, "get_execution_log", map[string]any{"execution_id": id})
	tooltest.Decode(t, res, &got)
	exit := 3
	want := []any{id, "execute_code", "bash", "echo fail; exit 3", "", "echo fail; exit 3\n", &exit, "execution_error", "fake"}
	if diff := cmp.Diff(want, []any{got.ExecutionID, got.Tool, got.Language, got.Code, got.Stdout, got.Stderr, got.ExitCode, got.Status, got.SandboxMode}); diff != "" {
		t.Errorf("[id tool language code stdout stderr exit status mode] (-want +got)\n%s\n%s", diff, tooltest.Text(res))
	}
}

// TestLogToolsRefuse: each refusal of the logs tools reaches the client
// with its code; an index that cannot be opened is LOG_UNAVAILABLE, the
// server's trouble, not the caller's.
func TestLogToolsRefuse(t *testing.T) {
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		brokenDB   bool
		want       string
	}{
		{"unknown execution", "get_execution_log", map[string]any{"execution_id": "exec_none"}, false, tool.CodeExecutionNotFound},
		{"execution id of the wrong type", "get_execution_log", map[string]any{"execution_id": 7}, false, tool.CodeInvalidParams},
		{"since that is no date", "search_execution_logs", map[string]any{"since": "yesterday"}, false, tool.CodeInvalidParams},
		{"unknown language", "search_execution_logs", map[string]any{"language": "cobol"}, false, tool.CodeInvalidLanguage},
		{"negative limit", "search_execution_logs", map[string]any{"limit": -1}, false, tool.CodeInvalidParams},
		{"unknown status", "search_execution_logs", map[string]any{"status": "paused"}, false, tool.CodeInvalidParams},
		{"search without an index", "search_execution_logs", map[string]any{}, true, tool.CodeLogUnavailable},
		{"get without an index", "get_execution_log", map[string]any{"execution_id": "exec_none"}, true, tool.CodeLogUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := ""
			if tc.brokenDB {
				db = t.TempDir() // a directory: no database can be opened there
			}
			got := tooltest.FailureOf(tooltest.Call(t, serveLogs(t, db).cs, tc.tool, tc.args))
			if !got.IsError || got.Code != tc.want || got.Message == "" {
				t.Errorf("got %+v, want an isError %s with a message", got, tc.want)
			}
		})
	}
}
