package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// jsonStdio is a codexec binary on stdio spoken to in JSON-RPC lines
// (go-sdk's jsonrpc encoding), for the requests no SDK client sends.
type jsonStdio struct {
	t    *testing.T
	in   io.WriteCloser
	out  *bufio.Reader
	next int64
}

func startJSONStdio(t *testing.T, env ...string) *jsonStdio {
	t.Helper()
	cmd := exec.Command(binary(t), "serve")
	cmd.Dir = t.TempDir()
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8",
		"CODEXEC_DATA_DIR=" + t.TempDir(), "CODEXEC_SANDBOX_DIR=" + aclFreeDir(t)}, env...)
	if mode := serverMode(); mode != "" {
		cmd.Env = append(cmd.Env, "CODEXEC_SANDBOX_MODE="+mode)
		if mode == "docker" { // the container engine's settings, as start gives them
			denv, why := dockerTestEnv(t, "node")
			if why != "" {
				t.Skip(why)
			}
			cmd.Env = append(cmd.Env, denv...)
		}
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("server log:\n%s", tail(stderr.String(), 6000))
		}
	})
	return &jsonStdio{t: t, in: in, out: bufio.NewReaderSize(out, 1<<20)}
}

// request sends method with params and returns its response, skipping
// notifications.
func (s *jsonStdio) request(method string, params any) *jsonrpc.Response {
	s.t.Helper()
	s.next++
	id, _ := jsonrpc.MakeID(float64(s.next))
	p, err := json.Marshal(params)
	if err != nil {
		s.t.Fatal(err)
	}
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: method, Params: p})
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatal(err)
	}
	for {
		line, err := s.out.ReadBytes('\n')
		if err != nil {
			s.t.Fatalf("%s: reading the answer: %v", method, err)
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			s.t.Fatalf("%s: %v in %s", method, err, line)
		}
		if r, ok := msg.(*jsonrpc.Response); ok && r.ID == id {
			return r
		}
	}
}

// result is the response's result decoded into a map; a JSON-RPC error
// fails the test.
func (s *jsonStdio) result(method string, params any) map[string]any {
	s.t.Helper()
	r := s.request(method, params)
	if r.Error != nil {
		s.t.Fatalf("%s: %v", method, r.Error)
	}
	var m map[string]any
	if err := json.Unmarshal(r.Result, &m); err != nil {
		s.t.Fatalf("%s: %v", method, err)
	}
	return m
}

// errorCode is the JSON-RPC error code of a response, 0 for a result.
func errorCode(r *jsonrpc.Response) (int64, string) {
	if r.Error == nil {
		return 0, ""
	}
	we, ok := r.Error.(*jsonrpc.Error)
	if !ok {
		return -1, r.Error.Error()
	}
	return we.Code, we.Message
}

// extMeta is the _meta of a 2026-07-28 request whose client declares the
// Tasks extension (or, declare false, declares nothing).
func extMeta(declare bool) map[string]any {
	caps := map[string]any{}
	if declare {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	return map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"}}
}

// TestTasksExtensionStdio: the 2026-07-28 Tasks extension in raw JSON-RPC
// over stdio, no initialize: server/discover advertises the extension; a
// call that asks to run in the background from a client declaring it is
// answered with a task handle (resultType task), which tasks/get reads to
// completed with the call's result inline; tasks/update is acknowledged;
// tasks/result and tasks/list are not methods of the extension; a request
// that does not declare the extension is refused with -32021; tasks/cancel
// of a running task is acknowledged and the task reads cancelled; the same
// call without the declaration is answered as before (a background run).
func TestTasksExtensionStdio(t *testing.T) {
	sameInEveryMode(t, "the tasks wire, over whatever mode runs the code")
	s := startJSONStdio(t)
	disc := s.result("server/discover", map[string]any{"_meta": extMeta(true)})
	caps, _ := disc["capabilities"].(map[string]any)
	if ext, _ := caps["extensions"].(map[string]any); ext["io.modelcontextprotocol/tasks"] == nil || caps["tasks"] != nil {
		t.Errorf("server/discover capabilities: %v, want the tasks extension and no 2025-11-25 tasks key", caps)
	}
	call := func(code string, declare bool) map[string]any {
		return s.result("tools/call", map[string]any{"name": "execute_code", "_meta": extMeta(declare),
			"arguments": map[string]any{"language": "bash", "code": code, "background": true}})
	}
	handle := call("echo from-a-task", true)
	id, _ := handle["taskId"].(string)
	if handle["resultType"] != "task" || handle["status"] != "working" || !strings.HasPrefix(id, "exec_") || handle["ttlMs"] == nil {
		t.Fatalf("the task handle: %v, want resultType task, working, the run's id and ttlMs", handle)
	}
	done := pollExtension(t, s, id)
	res, _ := done["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if done["resultType"] != "complete" || sc["stdout"] != "from-a-task\n" || sc["execution_id"] != id {
		t.Errorf("tasks/get of the ended task: %v, want completed with the call's result inline", done)
	}
	if got := s.result("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{}, "_meta": extMeta(true)}); got["resultType"] != "complete" {
		t.Errorf("tasks/update: %v, want an empty acknowledgement", got)
	}
	checkExtensionErrors(t, s, id)

	long := call("sleep 60", true)["taskId"].(string)
	if got := s.result("tasks/cancel", map[string]any{"taskId": long, "_meta": extMeta(true)}); !cmp.Equal(got, map[string]any{"resultType": "complete"}) {
		t.Errorf("tasks/cancel: %v, want an empty acknowledgement", got)
	}
	if got := s.result("tasks/get", map[string]any{"taskId": long, "_meta": extMeta(true)}); got["status"] != "cancelled" {
		t.Errorf("the cancelled task: %v", got)
	}
	plain := call("echo plain", false)
	sc, _ = plain["structuredContent"].(map[string]any)
	if plain["resultType"] == "task" || sc["status"] != "running" {
		t.Errorf("a background call without the extension: %v, want the usual running answer", plain)
	}
}

// pollExtension reads tasks/get until the task is no longer working.
func pollExtension(t *testing.T, s *jsonStdio, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := s.result("tasks/get", map[string]any{"taskId": id, "_meta": extMeta(true)})
		if got["status"] != "working" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still working after a minute: %v", id, got)
		}
		time.Sleep(time.Duration(got["pollIntervalMs"].(float64)) * time.Millisecond)
	}
}

// checkExtensionErrors: the errors the extension defines.
func checkExtensionErrors(t *testing.T, s *jsonStdio, id string) {
	t.Helper()
	for _, c := range []struct {
		method string
		params map[string]any
		code   int64
		says   string
	}{
		{"tasks/result", map[string]any{"taskId": id, "_meta": extMeta(true)}, -32601, "not a Tasks method"},
		{"tasks/list", map[string]any{"_meta": extMeta(true)}, -32601, "no tasks/list"},
		{"tasks/get", map[string]any{"taskId": id, "_meta": extMeta(false)}, -32021, "io.modelcontextprotocol/tasks"},
		{"tasks/get", map[string]any{"taskId": "exec_000000000000", "_meta": extMeta(true)}, -32602, "not found"},
		{"tasks/get", map[string]any{"_meta": extMeta(true)}, -32602, "taskId"},
	} {
		code, msg := errorCode(s.request(c.method, c.params))
		if code != c.code || !strings.Contains(msg, c.says) {
			t.Errorf("%s %v: error %d %q, want %d saying %q", c.method, c.params, code, msg, c.code, c.says)
		}
	}
}
