package e2e

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tsClient2Dir holds the official TypeScript client 2.x the tasks tests
// drive, pinned by its lockfile (installed by scripts/deps.sh, or here).
const tsClient2Dir = "testdata/tsclient2"

// tsClient2 makes sure the pinned TypeScript client 2.x is installed and
// returns its directory, or skips when node/npm are unavailable.
func tsClient2(t *testing.T) string {
	return npmPackage(t, tsClient2Dir, "@modelcontextprotocol/client", "the TypeScript client 2.x")
}

// runTasksScript runs testdata/tsclient2/tasks.mjs with args and env and
// decodes the report it prints into out.
func runTasksScript(t *testing.T, env []string, out any, args ...string) {
	t.Helper()
	runNodeReport(t, filepath.Join(tsClient2(t), "tasks.mjs"), withServerMode(env), 3*time.Minute, out, args...)
}

// withServerMode is env plus the sandbox mode of this test pass, for the
// server a stdio client script starts.
func withServerMode(env []string) []string {
	if mode := serverMode(); mode != "" {
		return append(env, "CODEXEC_SANDBOX_MODE="+mode)
	}
	return env
}

// tsTask is a 2025-11-25 Task as the client read it.
type tsTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
}

// tsAttempt is a request's answer or its error.
type tsAttempt struct {
	OK      json.RawMessage `json:"ok"`
	Code    int             `json:"code"`
	Message string          `json:"message"`
}

// tsToolResult is a CallToolResult as the client read it.
type tsToolResult struct {
	Meta    map[string]map[string]string `json:"_meta"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	Structured map[string]any `json:"structuredContent"`
}

// tsStdioReport is what `tasks.mjs stdio` prints.
type tsStdioReport struct {
	ProtocolVersion string            `json:"protocolVersion"`
	Capability      map[string]any    `json:"capability"`
	TaskSupport     map[string]string `json:"taskSupport"`
	Created, Ended  tsTask
	Polls           int            `json:"polls"`
	Result          tsToolResult   `json:"result"`
	GetRun          map[string]any `json:"getRun"`
	LongCreated     tsTask         `json:"longCreated"`
	Cancel          tsAttempt      `json:"cancel"`
	CancelledResult tsAttempt      `json:"cancelledResult"`
	CancelAgain     tsAttempt      `json:"cancelAgain"`
	List            []tsTask       `json:"list"`
	Unknown         tsAttempt      `json:"unknown"`
	Forbidden       tsAttempt      `json:"forbidden"`
	Plain           map[string]any `json:"plain"`
	Statuses        []tsTask       `json:"statuses"`
	Error           string         `json:"error"`
}

// TestTasksTSClientStdio: through the official TypeScript client 2.x over
// stdio, at 2025-11-25, codexec advertises tasks and which tools run as
// tasks; a tools/call with params.task answers with a working task at once,
// tasks/get reads it to completed, tasks/result is the call's own result
// tied to the task, and get_run reads the same run by the task id; a long
// task is cancelled (its result says cancelled, a second cancel is refused),
// tasks/list lists both, an unknown id and a tool that cannot run as a task
// are JSON-RPC errors, and a call without params.task is answered as before.
// Each task's end is notified (notifications/tasks/status).
func TestTasksTSClientStdio(t *testing.T) {
	sameInEveryMode(t, "the tasks wire, over whatever mode runs the code")
	var r tsStdioReport
	runTasksScript(t, []string{"CODEXEC_DATA_DIR=" + t.TempDir(), "CODEXEC_SANDBOX_DIR=" + aclFreeDir(t), "ALLOWED_COMMANDS=sleep"},
		&r, "stdio", binary(t), "serve")
	if r.Error != "" {
		t.Fatalf("client failed: %s", r.Error)
	}
	if r.ProtocolVersion != "2025-11-25" || r.Capability["requests"] == nil || r.Capability["list"] == nil || r.Capability["cancel"] == nil {
		t.Errorf("negotiated %q with tasks capability %v, want 2025-11-25 with list, cancel and requests.tools.call", r.ProtocolVersion, r.Capability)
	}
	for _, name := range []string{"execute_code", "run_script", "execute_command", "execute_process", "send_to_session", "install_package"} {
		if r.TaskSupport[name] != "optional" {
			t.Errorf("tools/list: %s has taskSupport %q, want optional (all: %v)", name, r.TaskSupport[name], r.TaskSupport)
		}
	}
	if r.TaskSupport["get_run"] != "" || r.TaskSupport["list_files"] != "" {
		t.Errorf("tools/list: tools that cannot run as tasks say they can: %v", r.TaskSupport)
	}
	id := r.Created.TaskID
	if !strings.HasPrefix(id, "exec_") || r.Created.Status != "working" || r.Created.TTL == nil || r.Created.PollInterval <= 0 {
		t.Errorf("the created task: %+v, want a working task with its run's id, a ttl and a poll interval", r.Created)
	}
	if r.Ended.TaskID != id || r.Ended.Status != "completed" || r.Ended.LastUpdatedAt <= r.Created.CreatedAt {
		t.Errorf("the polled task: %+v after %d polls, want completed later than created", r.Ended, r.Polls)
	}
	if r.Result.Meta["io.modelcontextprotocol/related-task"]["taskId"] != id || r.Result.Structured["status"] != "success" ||
		r.Result.Structured["stdout"] != "task says hi\n" || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "task says hi\n" {
		t.Errorf("tasks/result: %+v, want the call's own result (stdout as its text) tied to the task", r.Result)
	}
	if r.GetRun["execution_id"] != id || r.GetRun["status"] != "success" || r.GetRun["tool"] != "execute_code" {
		t.Errorf("get_run of the task id: %v, want the same run", r.GetRun)
	}
	checkCancelled(t, r)
	listed := map[string]string{}
	for _, l := range r.List {
		listed[l.TaskID] = l.Status
	}
	if listed[id] != "completed" || listed[r.LongCreated.TaskID] != "cancelled" {
		t.Errorf("tasks/list: %v, want %s completed and %s cancelled", listed, id, r.LongCreated.TaskID)
	}
	if r.Unknown.Code != -32602 || !strings.Contains(r.Unknown.Message, "not found") {
		t.Errorf("tasks/get of an unknown id: %+v, want -32602 saying not found", r.Unknown)
	}
	if r.Forbidden.Code != -32602 || !strings.Contains(r.Forbidden.Message, "cannot run as a task") {
		t.Errorf("list_files as a task: %+v, want -32602 saying it cannot run as a task", r.Forbidden)
	}
	if r.Plain["status"] != "success" || r.Plain["stdout"] != "plain\n" {
		t.Errorf("a call without params.task: %v, want its result as before", r.Plain)
	}
	notified := map[string]string{}
	for _, n := range r.Statuses {
		notified[n.TaskID] = n.Status
	}
	if want := map[string]string{id: "completed", r.LongCreated.TaskID: "cancelled"}; !cmp.Equal(notified, want) {
		t.Errorf("notifications/tasks/status: %v, want %v", notified, want)
	}
}

// checkCancelled: the long task was cancelled by tasks/cancel, its result
// says so, and cancelling it again is refused.
func checkCancelled(t *testing.T, r tsStdioReport) {
	t.Helper()
	var cancelled tsTask
	if err := json.Unmarshal(r.Cancel.OK, &cancelled); err != nil || cancelled.Status != "cancelled" || cancelled.TaskID != r.LongCreated.TaskID {
		t.Errorf("tasks/cancel: %+v, want the task cancelled", r.Cancel)
	}
	var res tsToolResult
	if err := json.Unmarshal(r.CancelledResult.OK, &res); err != nil || res.Structured["status"] != "cancelled" {
		t.Errorf("tasks/result of the cancelled task: %+v, want the command's result with status cancelled", r.CancelledResult)
	}
	if r.CancelAgain.Code != -32602 || !strings.Contains(r.CancelAgain.Message, "already cancelled") {
		t.Errorf("tasks/cancel of a cancelled task: %+v, want -32602 saying it is already cancelled", r.CancelAgain)
	}
}

// checkStatelessGet: a 2026-07-28 tasks/get over HTTP, without an MCP
// session (the revision has none), reads the task with its result inline.
func checkStatelessGet(t *testing.T, s *httpServer, id string) {
	t.Helper()
	params, _ := json.Marshal(map[string]any{"taskId": id, "_meta": extMeta(true)})
	body := `{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":` + string(params) + `}`
	code, out, _ := do(t, "POST", s.URL+"/mcp", body, mcpHeaders(map[string]string{"Authorization": "Bearer " + aliceToken,
		"MCP-Protocol-Version": "2026-07-28"}))
	var m struct {
		Result struct {
			ResultType, Status string
			Result             struct {
				StructuredContent map[string]any `json:"structuredContent"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &m); code != http.StatusOK || err != nil || m.Result.ResultType != "complete" ||
		m.Result.Status != "completed" || m.Result.Result.StructuredContent["stdout"] != "outlived\n" {
		t.Errorf("a stateless 2026-07-28 tasks/get: %d %s, want the completed task with its result inline", code, out)
	}
}

// tsReadReport is what `tasks.mjs read` prints.
type tsReadReport struct {
	First  tsAttempt `json:"first"`
	Ended  tsTask    `json:"ended"`
	Result tsAttempt `json:"result"`
	Cancel tsAttempt `json:"cancel"`
	List   []string  `json:"list"`
	Error  string    `json:"error"`
}

// TestTasksOutliveClientHTTP: over Streamable HTTP, a task created by one
// TypeScript client that then leaves runs on; a new client of the same
// principal reads it to completed and gets its result; another principal's
// client is told it does not exist, and does not see it in tasks/list.
func TestTasksOutliveClientHTTP(t *testing.T) {
	sameInEveryMode(t, "ownership and the run store, whatever runs the code")
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t))
	var created struct {
		TaskID, Status, Error string
	}
	runTasksScript(t, nil, &created, "create", s.URL, aliceToken)
	if created.Error != "" || created.Status != "working" || created.TaskID == "" {
		t.Fatalf("create: %+v", created)
	}
	var bob tsReadReport
	runTasksScript(t, nil, &bob, "read", s.URL, bobToken, created.TaskID)
	if bob.First.Code != -32602 || !strings.Contains(bob.First.Message, "not found") || bob.Cancel.Code != -32602 || len(bob.List) != 0 {
		t.Errorf("bob reading alice's task: %+v, want not found everywhere and an empty list", bob)
	}
	var alice tsReadReport
	runTasksScript(t, nil, &alice, "read", s.URL, aliceToken, created.TaskID)
	var res tsToolResult
	if alice.Error != "" || alice.Ended.Status != "completed" || json.Unmarshal(alice.Result.OK, &res) != nil ||
		res.Structured["stdout"] != "outlived\n" {
		t.Errorf("alice's new client reading her task: %+v, want completed with the run's output", alice)
	}
	if len(alice.List) != 1 || alice.List[0] != created.TaskID {
		t.Errorf("alice's tasks/list: %v, want [%s]", alice.List, created.TaskID)
	}
	if alice.Cancel.Code != -32602 || !strings.Contains(alice.Cancel.Message, "already completed") {
		t.Errorf("cancelling a completed task: %+v, want -32602 saying it already completed", alice.Cancel)
	}
	checkStatelessGet(t, s, created.TaskID)
	body := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"` + created.TaskID + `"}}`
	if code, out, _ := do(t, "POST", s.URL+"/mcp", body, mcpHeaders(map[string]string{"Authorization": "Bearer " + aliceToken,
		"Host": "attacker.example"})); code != http.StatusForbidden {
		t.Errorf("tasks/get with a foreign Host on loopback: %d %s, want 403 (DNS rebinding guard)", code, out)
	}
}
