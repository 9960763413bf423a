package tasks

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func decode(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%v in %s", err, raw)
	}
	return m
}

func TestCallParams(t *testing.T) {
	for _, c := range []struct {
		name, in string
		changed  bool
		want     map[string]any
	}{
		{"no task", `{"name":"execute_code","arguments":{"code":"print('task')"}}`, false, nil},
		{"task in the code only", `{"name":"execute_code","arguments":{"code":"\"task\""}}`, false, nil},
		{"task", `{"name":"execute_code","arguments":{},"task":{"ttl":5}}`, true,
			map[string]any{"name": "execute_code", "arguments": map[string]any{}, "_meta": map[string]any{MarkerKey: map[string]any{"ttl": 5.0}}}},
		{"task beside _meta", `{"name":"x","_meta":{"progressToken":1},"task":{}}`, true,
			map[string]any{"name": "x", "_meta": map[string]any{"progressToken": 1.0, MarkerKey: map[string]any{}}}},
		{"null task", `{"name":"x","task":null}`, true, map[string]any{"name": "x", "_meta": map[string]any{MarkerKey: map[string]any{}}}},
		{"malformed _meta", `{"name":"x","_meta":3,"task":{}}`, false, nil},
		{"not an object", `["task"]`, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, changed := callParams(json.RawMessage(c.in))
			if changed != c.changed {
				t.Fatalf("changed = %v, want %v (%s)", changed, c.changed, got)
			}
			if !changed {
				if string(got) != c.in {
					t.Errorf("unchanged params came back as %s", got)
				}
				return
			}
			if diff := cmp.Diff(c.want, decode(t, got)); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetField(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{``, `{"background":true}`},
		{`null`, `{"background":true}`},
		{`{}`, `{"background":true}`},
		{`{"background":false,"code":"x"}`, `{"background":true,"code":"x"}`},
	} {
		got, err := SetField(json.RawMessage(c.in), "background", json.RawMessage("true"))
		if err != nil {
			t.Fatalf("SetField(%s): %v", c.in, err)
		}
		if diff := cmp.Diff(decode(t, json.RawMessage(c.want)), decode(t, got)); diff != "" {
			t.Errorf("SetField(%s) (-want +got):\n%s", c.in, diff)
		}
	}
	if _, err := SetField(json.RawMessage(`[1]`), "background", json.RawMessage("true")); err == nil {
		t.Error("SetField of an array: no error")
	}
}

func TestInitializeResult(t *testing.T) {
	legacyCaps := map[string]any{"list": map[string]any{}, "cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}
	for _, c := range []struct {
		name, in string
		tasks    any
	}{
		{"2025-11-25", `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}}}`, legacyCaps},
		{"2025-06-18 has no tasks", `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}}}`, nil},
		{"2026-07-28 has the extension instead", `{"protocolVersion":"2026-07-28","capabilities":{"tools":{}}}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			caps, _ := decode(t, initializeResult(json.RawMessage(c.in)))["capabilities"].(map[string]any)
			if diff := cmp.Diff(c.tasks, caps["tasks"]); diff != "" {
				t.Errorf("capabilities.tasks (-want +got):\n%s", diff)
			}
			if caps["tools"] == nil {
				t.Errorf("the other capabilities were lost: %v", caps)
			}
		})
	}
}

func TestToolsListResult(t *testing.T) {
	w := NewWire(nil, []string{"execute_code"})
	in := `{"tools":[{"name":"execute_code","inputSchema":{"type":"object"}},{"name":"get_run","inputSchema":{"type":"object"}}],"nextCursor":"c"}`
	got := decode(t, w.toolsListResult(json.RawMessage(in)))
	want := map[string]any{"nextCursor": "c", "tools": []any{
		map[string]any{"name": "execute_code", "inputSchema": map[string]any{"type": "object"}, "execution": map[string]any{"taskSupport": "optional"}},
		map[string]any{"name": "get_run", "inputSchema": map[string]any{"type": "object"}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools/list (-want +got):\n%s", diff)
	}
	for version, rewritten := range map[string]bool{"2025-11-25": true, "2025-06-18": false, "2026-07-28": false, "": false} {
		if f := w.responseRewrite("tools/list", version); (f != nil) != rewritten {
			t.Errorf("tools/list at %q rewritten: %v, want %v (only 2025-11-25 has taskSupport)", version, f != nil, rewritten)
		}
	}
}

func TestExtended(t *testing.T) {
	declared := map[string]any{"extensions": map[string]any{ExtensionID: map[string]any{}}}
	for _, c := range []struct {
		name              string
		meta              map[string]any
		newProto, declare bool
	}{
		{"no meta", nil, false, false},
		{"2025-11-25 in meta", map[string]any{protocolVersionKey: "2025-11-25", clientCapabilitiesKey: declared}, false, false},
		{"2026-07-28 without the extension", map[string]any{protocolVersionKey: "2026-07-28", clientCapabilitiesKey: map[string]any{}}, true, false},
		{"2026-07-28 with the extension", map[string]any{protocolVersionKey: "2026-07-28", clientCapabilitiesKey: declared}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, d := Extended(c.meta)
			if n != c.newProto || d != c.declare {
				t.Errorf("Extended = %v, %v; want %v, %v", n, d, c.newProto, c.declare)
			}
		})
	}
}

func TestTaskShapes(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	task := Task{ID: "exec_1", Status: StatusCompleted, CreatedAt: at, UpdatedAt: at.Add(time.Second), TTL: time.Hour,
		PollInterval: 500 * time.Millisecond, Result: json.RawMessage(`{"content":[]}`)}
	for _, c := range []struct {
		name string
		v    any
		want map[string]any
	}{
		{"2025-11-25", task.Legacy(), map[string]any{"taskId": "exec_1", "status": "completed", "createdAt": "2026-12-01T10:00:00Z",
			"lastUpdatedAt": "2026-12-01T10:00:01Z", "ttl": 3600000.0, "pollInterval": 500.0}},
		{"extension handle", task.Extension("task"), map[string]any{"resultType": "task", "taskId": "exec_1", "status": "completed",
			"createdAt": "2026-12-01T10:00:00Z", "lastUpdatedAt": "2026-12-01T10:00:01Z", "ttlMs": 3600000.0, "pollIntervalMs": 500.0}},
		{"extension get", task.Extension("complete"), map[string]any{"resultType": "complete", "taskId": "exec_1", "status": "completed",
			"createdAt": "2026-12-01T10:00:00Z", "lastUpdatedAt": "2026-12-01T10:00:01Z", "ttlMs": 3600000.0, "pollIntervalMs": 500.0,
			"result": map[string]any{"content": []any{}}}},
		{"no ttl is null", Task{ID: "x", Status: StatusWorking, CreatedAt: at, UpdatedAt: at}.Legacy(), map[string]any{"taskId": "x",
			"status": "working", "createdAt": "2026-12-01T10:00:00Z", "lastUpdatedAt": "2026-12-01T10:00:00Z", "ttl": nil}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, decode(t, b)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatusOf(t *testing.T) {
	for run, want := range map[string]string{"running": StatusWorking, "success": StatusCompleted, "execution_error": StatusCompleted,
		"timeout": StatusCompleted, "setup_error": StatusCompleted, "cancelled": StatusCancelled, "lost": StatusFailed} {
		if got := StatusOf(run); got != want {
			t.Errorf("StatusOf(%q) = %q, want %q", run, got, want)
		}
	}
}

// BenchmarkCallParams is what the tasks wire costs a tools/call that is
// not a task (a byte search of its params) against one that is (decoded,
// moved, encoded), for small and 1 MiB arguments.
//
//	go test ./internal/mcpserver/tasks -run '^$' -bench CallParams
func BenchmarkCallParams(b *testing.B) {
	for _, size := range []int{64, 1 << 20} {
		code := strings.Repeat("x", size)
		plain := json.RawMessage(`{"name":"execute_code","arguments":{"language":"python","code":"` + code + `"}}`)
		task := json.RawMessage(`{"name":"execute_code","arguments":{"language":"python","code":"` + code + `"},"task":{}}`)
		for name, p := range map[string]json.RawMessage{"plain": plain, "task": task} {
			b.Run(name+"-"+map[int]string{64: "64B", 1 << 20: "1MiB"}[size], func(b *testing.B) {
				b.SetBytes(int64(len(p)))
				for b.Loop() {
					callParams(p)
				}
			})
		}
	}
}

func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{"localhost": true, "LOCALHOST:8080": true, "127.0.0.1:80": true, "[::1]:9": true,
		"::1": true, "example.com": false, "10.0.0.1:80": false, "localhost.example.com": false} {
		if got := loopback(host); got != want {
			t.Errorf("loopback(%q) = %v, want %v", host, got, want)
		}
	}
}
