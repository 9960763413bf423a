package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/pgtest"
)

// httpTasks is one principal's raw JSON-RPC client of a replica's /mcp,
// for the requests no go-sdk client sends (params.task, tasks/*).
type httpTasks struct {
	t       *testing.T
	url     string
	token   string
	session string
}

// newHTTPTasks initializes a 2025-11-25 MCP session on s for token.
func newHTTPTasks(t *testing.T, s *httpServer, token string) *httpTasks {
	t.Helper()
	c := &httpTasks{t: t, url: s.URL + "/mcp", token: token}
	_, hdr := c.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"tasks":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	c.session = hdr.Get("Mcp-Session-Id")
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// post sends one message and returns the JSON-RPC response in the answer
// (one JSON body or the data of an event stream), and the headers.
func (c *httpTasks) post(body string) (map[string]any, http.Header) {
	c.t.Helper()
	extra := map[string]string{"Authorization": "Bearer " + c.token, "MCP-Protocol-Version": "2025-11-25"}
	if c.session != "" {
		extra["Mcp-Session-Id"] = c.session
	}
	code, out, hdr := do(c.t, "POST", c.url, body, mcpHeaders(extra))
	if code == http.StatusAccepted {
		return nil, hdr
	}
	if code != http.StatusOK {
		c.t.Fatalf("POST %s: %d %s", body, code, out)
	}
	for _, l := range strings.Split(out, "\n") {
		data, ok := strings.CutPrefix(l, "data: ")
		if !ok && strings.HasPrefix(l, "{") {
			data, ok = l, true
		}
		var m map[string]any
		if ok && json.Unmarshal([]byte(data), &m) == nil && m["id"] != nil {
			return m, hdr
		}
	}
	c.t.Fatalf("POST %s: no response in %q", body, out)
	return nil, nil
}

// request sends method with params and returns its result, or its error.
func (c *httpTasks) request(method string, params any) (result, rpcErr map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	m, _ := c.post(string(b))
	result, _ = m["result"].(map[string]any)
	rpcErr, _ = m["error"].(map[string]any)
	return result, rpcErr
}

// listsTask reports whether a tasks/list result lists task id with status.
func listsTask(list map[string]any, id, status string) bool {
	tasks, _ := list["tasks"].([]any)
	for _, t := range tasks {
		if m, _ := t.(map[string]any); m["taskId"] == id {
			return m["status"] == status
		}
	}
	return false
}

// TestTasksAcrossReplicas: replicas sharing the session registry serve a
// task wherever it runs. Alice's task on replica A is read, cancelled and
// listed through replica B, where bob is told it does not exist and lists
// none; the task of a
// replica that was killed while it ran reads failed through B, saying the
// run was lost with its replica, as get_run reads it lost.
func TestTasksAcrossReplicas(t *testing.T) {
	sameInEveryMode(t, "replicas pin subprocess mode")
	dsn := pgtest.Start(t).NewDatabase(t)
	tokens := "CODEXEC_AUTH_TOKENS=" + tokenFile(t)
	a := startHTTP(t, "", replicaEnv(dsn, "r-a", tokens)...)
	b := startHTTP(t, "", replicaEnv(dsn, "r-b", tokens)...)
	aliceA, aliceB, bobB := newHTTPTasks(t, a, aliceToken), newHTTPTasks(t, b, aliceToken), newHTTPTasks(t, b, bobToken)

	created, e := aliceA.request("tools/call", map[string]any{"name": "execute_code", "task": map[string]any{},
		"arguments": map[string]any{"language": "bash", "code": "sleep 60"}})
	task, _ := created["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if e != nil || id == "" {
		t.Fatalf("the task on r-a: %v %v", created, e)
	}
	if got, e := aliceB.request("tasks/get", map[string]any{"taskId": id}); e != nil || got["status"] != "working" {
		t.Errorf("tasks/get through r-b: %v %v, want working", got, e)
	}
	if _, e := bobB.request("tasks/get", map[string]any{"taskId": id}); e == nil || e["code"] != -32602.0 {
		t.Errorf("bob's tasks/get of alice's task: %v, want -32602", e)
	}
	if got, e := aliceB.request("tasks/cancel", map[string]any{"taskId": id}); e != nil || got["status"] != "cancelled" {
		t.Errorf("tasks/cancel through r-b: %v %v, want cancelled", got, e)
	}

	if got, _ := aliceB.request("tasks/list", map[string]any{}); !listsTask(got, id, "cancelled") {
		t.Errorf("tasks/list through r-b: %v, want r-a's task %s cancelled", got, id)
	}
	if got, _ := bobB.request("tasks/list", map[string]any{}); len(got["tasks"].([]any)) != 0 {
		t.Errorf("bob's tasks/list: %v, want none", got)
	}

	c := startHTTP(t, "", replicaEnv(dsn, "r-c", tokens)...)
	created, _ = newHTTPTasks(t, c, aliceToken).request("tools/call", map[string]any{"name": "execute_code", "task": map[string]any{},
		"arguments": map[string]any{"language": "bash", "code": "sleep 60"}})
	onC := created["task"].(map[string]any)["taskId"].(string)
	_ = c.Cmd.Process.Kill()
	deadline := time.Now().Add(4 * replicaLease)
	for {
		got, e := aliceB.request("tasks/get", map[string]any{"taskId": onC})
		if e == nil && got["status"] == "failed" {
			if msg, _ := got["statusMessage"].(string); !strings.Contains(msg, "Replica r-c stopped") {
				t.Errorf("the lost task: %v, want a status message naming the stopped replica", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task of a killed replica: %v %v", got, e)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, e := aliceB.request("tasks/result", map[string]any{"taskId": onC}); e == nil || !strings.Contains(e["message"].(string), "lost") {
		t.Errorf("tasks/result of the lost task: %v, want an error saying it was lost", e)
	}
	if got, _ := aliceB.request("tasks/list", map[string]any{}); !listsTask(got, onC, "failed") {
		t.Errorf("tasks/list after r-c died: %v, want its task %s failed", got, onC)
	}
}

// TestTasksSessionOnAnotherReplica: a send_to_session task (2025-11-25
// form) for a session replica A holds, asked of replica B, is forwarded to
// A like the plain call: its result, read through B, has the session's
// state.
func TestTasksSessionOnAnotherReplica(t *testing.T) {
	sameInEveryMode(t, "replicas pin subprocess mode")
	dsn := pgtest.Start(t).NewDatabase(t)
	tokens := "CODEXEC_AUTH_TOKENS=" + tokenFile(t)
	a := startHTTP(t, "", replicaEnv(dsn, "r-a", tokens)...)
	b := startHTTP(t, "", replicaEnv(dsn, "r-b", tokens)...)
	aliceA, aliceB := newHTTPTasks(t, a, aliceToken), newHTTPTasks(t, b, aliceToken)
	started, e := aliceA.request("tools/call", map[string]any{"name": "start_session", "arguments": map[string]any{"language": "python"}})
	sc, _ := started["structuredContent"].(map[string]any)
	sid, _ := sc["session_id"].(string)
	if e != nil || sid == "" {
		t.Fatalf("start_session on r-a: %v %v", started, e)
	}
	if _, e := aliceA.request("tools/call", map[string]any{"name": "send_to_session", "arguments": map[string]any{"session_id": sid, "code": "x = 41"}}); e != nil {
		t.Fatalf("x = 41: %v", e)
	}
	created, e := aliceB.request("tools/call", map[string]any{"name": "send_to_session", "task": map[string]any{},
		"arguments": map[string]any{"session_id": sid, "code": "print(x+1)"}})
	task, _ := created["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if e != nil || id == "" {
		t.Fatalf("the send as a task through r-b: %v %v", created, e)
	}
	res, e := aliceB.request("tasks/result", map[string]any{"taskId": id})
	sc, _ = res["structuredContent"].(map[string]any)
	if e != nil || sc["stdout"] != "42\n" {
		t.Errorf("tasks/result through r-b: %v %v, want 42 from the session on r-a", res, e)
	}
}
