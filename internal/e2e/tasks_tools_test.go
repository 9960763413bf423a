package e2e

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// callExt calls tool name with args as a 2026-07-28 client declaring the
// Tasks extension and returns the result (a task handle when args ask for
// background: true).
func callExt(s *jsonStdio, name string, args map[string]any) map[string]any {
	s.t.Helper()
	return s.result("tools/call", map[string]any{"name": name, "_meta": extMeta(true), "arguments": args})
}

// taskID is a task handle's id; anything else fails the test.
func taskID(t *testing.T, handle map[string]any) string {
	t.Helper()
	id, _ := handle["taskId"].(string)
	if handle["resultType"] != "task" || handle["status"] != "working" || id == "" {
		t.Fatalf("want a working task handle, got %v", handle)
	}
	return id
}

// taskContent is the structured content of an ended task's result.
func taskContent(t *testing.T, s *jsonStdio, id string) map[string]any {
	t.Helper()
	done := pollExtension(t, s, id)
	res, _ := done["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if sc == nil {
		t.Fatalf("task %s ended without a result: %v", id, done)
	}
	return sc
}

// TestTasksSessionSend: send_to_session runs as a task in the session: its
// state is the session's (x = 41, then a task print(x+1) prints 42), the
// task is a background run get_run reads, and cancelling a long send as a
// task interrupts the code as cancelling the call does: the session keeps
// its state.
func TestTasksSessionSend(t *testing.T) {
	s := startJSONStdio(t)
	started := callExt(s, "start_session", map[string]any{"language": "python"})
	sc, _ := started["structuredContent"].(map[string]any)
	sid, _ := sc["session_id"].(string)
	if sid == "" {
		t.Fatalf("start_session: %v", started)
	}
	send := func(code string, background bool) map[string]any {
		return callExt(s, "send_to_session", map[string]any{"session_id": sid, "code": code, "background": background})
	}
	if r := send("x = 41", false); r["isError"] == true {
		t.Fatalf("x = 41: %v", r)
	}
	id := taskID(t, send("print(x+1)", true))
	if got := taskContent(t, s, id); got["stdout"] != "42\n" || got["status"] != "success" {
		t.Errorf("the send as a task: %v, want 42 from the session's x", got)
	}
	run := callExt(s, "get_run", map[string]any{"execution_id": id})
	if rc, _ := run["structuredContent"].(map[string]any); rc["status"] != "success" {
		t.Errorf("get_run of the task: %v", run)
	}

	long := taskID(t, send("print('spinning', flush=True)\nwhile True: pass", true))
	time.Sleep(time.Second)
	s.result("tasks/cancel", map[string]any{"taskId": long, "_meta": extMeta(true)})
	if got := s.result("tasks/get", map[string]any{"taskId": long, "_meta": extMeta(true)}); got["status"] != "cancelled" {
		t.Errorf("the cancelled send: %v", got)
	}
	if got := taskContent(t, s, long); got["status"] != "cancelled" || !strings.Contains(got["error_message"].(string), "state is preserved") {
		t.Errorf("the cancelled send's result: %v, want cancelled saying the session's state is preserved", got)
	}
	after := send("print(x)", false)
	sc, _ = after["structuredContent"].(map[string]any)
	if sc["stdout"] != "41\n" {
		t.Errorf("the session after a cancelled send: %v, want its state (41)", after)
	}
}

// TestTasksInstallPackage: install_package runs as a task: a wheel from a
// local index installs (the task's result is the call's), a blocklisted
// package answers as a normal result (success false, nothing installed),
// and cancelling an install stuck on its registry kills the installer (its
// connection to the registry closes).
func TestTasksInstallPackage(t *testing.T) {
	sameInEveryMode(t, "the installer runs on the host in every mode")
	ix := demoIndex(t)
	reg := newStuckRegistry(t)
	s := startJSONStdio(t, "CODEXEC_PIP_INDEX_URL="+ix.URL(), "CODEXEC_NPM_REGISTRY=http://"+reg.addr+"/",
		"CODEXEC_PACKAGE_BLOCKLIST=node:is-number")
	install := func(pkg, lang string) string {
		return taskID(t, callExt(s, "install_package", map[string]any{"package": pkg, "language": lang, "background": true}))
	}
	if got := taskContent(t, s, install("codexec-demo==2.0.0", "python")); got["success"] != true || got["version"] != "2.0.0" {
		t.Errorf("the install as a task: %v", got)
	}
	got := taskContent(t, s, install("is-number", "node"))
	if got["success"] != false || !strings.Contains(got["error"].(string), "blocked") {
		t.Errorf("a blocked install as a task: %v, want success false saying blocked", got)
	}
	stuck := install("left-pad", "node")
	if !reg.waitConnected(30 * time.Second) {
		t.Fatalf("npm never reached the registry")
	}
	s.result("tasks/cancel", map[string]any{"taskId": stuck, "_meta": extMeta(true)})
	if got := s.result("tasks/get", map[string]any{"taskId": stuck, "_meta": extMeta(true)}); got["status"] != "cancelled" {
		t.Errorf("the cancelled install: %v", got)
	}
	if !reg.waitClosed(10 * time.Second) {
		t.Errorf("the installer still holds its registry connection after the task was cancelled")
	}
}

// stuckRegistry is a loopback listener that accepts and never answers,
// which tells when its connections close.
type stuckRegistry struct {
	addr      string
	mu        sync.Mutex
	open      int
	connected chan struct{}
	once      sync.Once
}

func newStuckRegistry(t *testing.T) *stuckRegistry {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	r := &stuckRegistry{addr: l.Addr().String(), connected: make(chan struct{})}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.open++
			r.mu.Unlock()
			r.once.Do(func() { close(r.connected) })
			go func() {
				_, _ = io.Copy(io.Discard, c)
				_ = c.Close()
				r.mu.Lock()
				r.open--
				r.mu.Unlock()
			}()
		}
	}()
	return r
}

func (r *stuckRegistry) waitConnected(d time.Duration) bool {
	select {
	case <-r.connected:
		return true
	case <-time.After(d):
		return false
	}
}

func (r *stuckRegistry) waitClosed(d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		r.mu.Lock()
		open := r.open
		r.mu.Unlock()
		if open == 0 {
			return true
		}
	}
	return false
}
