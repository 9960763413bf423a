package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

type ctxOut struct {
	ContextID   string `json:"context_id"`
	Name        string `json:"name"`
	Language    string `json:"language"`
	Description string `json:"description"`
	CreatedAt   string `json:"created_at"`
	Status      string `json:"status"`
	Message     string `json:"message"`
	LastUsed    string `json:"last_used"`
}

type runOut struct {
	Stdout        string  `json:"stdout"`
	Stderr        string  `json:"stderr"`
	Success       bool    `json:"success"`
	ExecutionTime float64 `json:"execution_time"`
}

func (s *server) createContext(args map[string]any) ctxOut {
	s.t.Helper()
	var out ctxOut
	res := s.callInto("create_context", args, &out)
	if res.IsError || !strings.HasPrefix(out.ContextID, "ctx-") || out.Status != "active" {
		s.t.Fatalf("create_context %v: %+v %s", args, out, text(res))
	}
	var fromText ctxOut
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil || fromText.ContextID != out.ContextID {
		s.t.Errorf("text content is not the 001 JSON object: %s", text(res))
	}
	return out
}

func (s *server) runCode(ctxID, code string) runOut {
	s.t.Helper()
	var out runOut
	res := s.callInto("run_code", map[string]any{"code": code, "context_id": ctxID}, &out)
	if res.IsError {
		s.t.Fatalf("run_code: %s", text(res))
	}
	return out
}

// toolErrorCode decodes seed 001's {"error": …, "code": …} tool error.
func toolErrorCode(t *testing.T, s *server, name string, args map[string]any) (string, string) {
	t.Helper()
	res := s.call(name, args)
	if !res.IsError {
		t.Fatalf("%s %v: expected a tool error, got %s", name, args, text(res))
	}
	var e struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	if err := json.Unmarshal([]byte(text(res)), &e); err != nil {
		t.Fatalf("error text is not 001 JSON: %q", text(res))
	}
	return e.Code, e.Error
}

// TestContextsSeed001Examples walks through seed 001's examples.
func TestContextsSeed001Examples(t *testing.T) {
	s := start(t)
	bob := s.createContext(map[string]any{"name": "user-bob", "description": "Bob 的工作环境"})
	if bob.Language != "python" || bob.Description != "Bob 的工作环境" || bob.Message == "" {
		t.Errorf("defaults: %+v", bob)
	}
	// State persists within a context.
	if r := s.runCode(bob.ContextID, "x = 42"); !r.Success || r.Stdout != "" {
		t.Fatalf("%+v", r)
	}
	if r := s.runCode(bob.ContextID, "print(x)"); r.Stdout != "42\n" || r.ExecutionTime <= 0 {
		t.Fatalf("%+v", r)
	}
	// Example 4: counter.
	s.runCode(bob.ContextID, "counter = 0\nfor i in range(5):\n    counter += i\nprint(f'Counter: {counter}')")
	if r := s.runCode(bob.ContextID, "counter += 10\nprint(f'Counter now: {counter}')"); r.Stdout != "Counter now: 20\n" {
		t.Fatalf("%+v", r)
	}
	// NameError in another context.
	alice := s.createContext(map[string]any{"name": "user-alice", "language": "python"})
	r := s.runCode(alice.ContextID, "print(x)")
	if r.Success || !strings.Contains(r.Stderr, "NameError") || !strings.Contains(r.Stderr, "Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>") {
		t.Fatalf("isolation: %+v", r)
	}
	// Example 3: error handling.
	if r := s.runCode(alice.ContextID, "x = 1 / 0"); r.Success || !strings.HasSuffix(r.Stderr, "ZeroDivisionError: division by zero\n") {
		t.Fatalf("%+v", r)
	}
	// Example 2 of create_context: the name works as the context id.
	s.createContext(map[string]any{"name": "data-analysis-1"})
	if r := s.runCode("data-analysis-1", "result = 'A'\nresult"); r.Stdout != "'A'\n" {
		t.Fatalf("name as id: %+v", r)
	}
	// JavaScript context.
	js := s.createContext(map[string]any{"name": "web-scraping-task", "language": "javascript", "description": "网页数据爬取和处理"})
	if js.Language != "javascript" || !strings.Contains(js.Message, "JavaScript") {
		t.Errorf("%+v", js)
	}
	if r := s.runCode(js.ContextID, "const data = {name: 'Alice', age: 25};\nconsole.log(JSON.stringify(data));"); r.Stdout != "{\"name\":\"Alice\",\"age\":25}\n" {
		t.Fatalf("js: %+v", r)
	}
	// list_contexts: newest first, total, last_used.
	var list struct {
		Contexts []ctxOut `json:"contexts"`
		Total    int      `json:"total"`
	}
	s.callInto("list_contexts", map[string]any{}, &list)
	if list.Total != 4 || list.Contexts[0].Name != "web-scraping-task" || list.Contexts[3].Name != "user-bob" || list.Contexts[3].LastUsed <= list.Contexts[3].CreatedAt {
		t.Fatalf("list: %+v", list)
	}
	// stop then use.
	var stopped struct{ ContextID, Status, Message string }
	s.callInto("stop_context", map[string]any{"context_id": bob.ContextID}, &stopped)
	if stopped.Status != "stopped" || stopped.Message != "Context stopped successfully" {
		t.Fatalf("%+v", stopped)
	}
	if code, msg := toolErrorCode(t, s, "run_code", map[string]any{"code": "print(x)", "context_id": bob.ContextID}); code != "CONTEXT_NOT_FOUND" || msg != "Context not found: "+bob.ContextID {
		t.Fatalf("use after stop: %s %s", code, msg)
	}
}

func TestContextErrorCodes(t *testing.T) {
	s := start(t)
	cases := []struct {
		tool string
		args map[string]any
		code string
	}{
		{"run_code", map[string]any{"code": "print(1)", "context_id": "ctx-abc123"}, "CONTEXT_NOT_FOUND"},
		{"run_code", map[string]any{"code": "print(1)", "context_id": ""}, "INVALID_PARAMS"},
		{"run_code", map[string]any{"code": "result = 2 + 2"}, "INVALID_PARAMS"},
		{"run_code", map[string]any{"context_id": "ctx-abc123"}, "INVALID_PARAMS"},
		{"stop_context", map[string]any{}, "INVALID_PARAMS"},
		{"create_context", map[string]any{"language": "python"}, "INVALID_CONTEXT_NAME"},
		{"stop_context", map[string]any{"context_id": "ctx-abc123"}, "CONTEXT_NOT_FOUND"},
		{"create_context", map[string]any{"name": ""}, "INVALID_CONTEXT_NAME"},
		{"create_context", map[string]any{"name": "bad name; rm"}, "INVALID_CONTEXT_NAME"},
		{"create_context", map[string]any{"name": "ok", "language": "ruby"}, "INVALID_LANGUAGE"},
	}
	for _, c := range cases {
		if code, msg := toolErrorCode(t, s, c.tool, c.args); code != c.code {
			t.Errorf("%s %v: code %s (%s), want %s", c.tool, c.args, code, msg, c.code)
		}
	}
	s.createContext(map[string]any{"name": "dup"})
	if code, _ := toolErrorCode(t, s, "create_context", map[string]any{"name": "dup"}); code != "INVALID_CONTEXT_NAME" {
		t.Errorf("duplicate name: %s", code)
	}
	var empty struct {
		Contexts []ctxOut `json:"contexts"`
		Total    int      `json:"total"`
	}
	s.callInto("list_contexts", map[string]any{}, &empty)
	if empty.Total != 1 {
		t.Errorf("total %d", empty.Total)
	}
}
