package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/mcpserver/tooltest"
)

// contractCall is one failing call of a tool and the code it must get.
type contractCall struct {
	args any
	code string
	// field must appear in the message (invalid arguments name theirs).
	field string
}

// contractRow is every tool's pair of failing calls: one with an argument
// of the wrong type, one that the tool refuses (unknown id, policy, …).
// A tool that takes no arguments, or refuses nothing, says why instead.
type contractRow struct {
	invalid, refused contractCall
	noInvalid        string
	noRefused        string
}

var contractRows = map[string]contractRow{
	"cancel_run": {invalid: contractCall{map[string]any{"execution_id": 1}, tool.CodeInvalidParams, "execution_id"},
		refused: contractCall{map[string]any{"execution_id": "exec_nope"}, tool.CodeExecutionNotFound, ""}},
	"get_run": {invalid: contractCall{map[string]any{"execution_id": "exec_x", "wait_ms": 60001}, tool.CodeInvalidParams, "wait_ms"},
		refused: contractCall{map[string]any{"execution_id": "exec_nope"}, tool.CodeExecutionNotFound, ""}},
	"list_runs": {invalid: contractCall{map[string]any{"limit": "5"}, tool.CodeInvalidParams, "limit"},
		refused: contractCall{map[string]any{"status": "paused"}, tool.CodeInvalidParams, "status"}},
	"close_session": {invalid: contractCall{map[string]any{"session_id": 7}, tool.CodeInvalidParams, "session_id"},
		refused: contractCall{map[string]any{"session_id": "nope"}, tool.CodeSessionNotFound, ""}},
	"create_context": {invalid: contractCall{map[string]any{"name": []any{"a"}}, tool.CodeInvalidParams, "name"},
		refused: contractCall{map[string]any{"name": "bad name!"}, tool.CodeInvalidContextName, ""}},
	"download_file": {invalid: contractCall{map[string]any{"path": "a", "session_id": "s", "offset": 1e30}, tool.CodeInvalidParams, "offset"},
		refused: contractCall{map[string]any{"path": "a", "execution_id": "exe_nope"}, tool.CodeExecutionNotFound, ""}},
	"execute_code": {invalid: contractCall{map[string]any{"language": "python", "code": "print(1)", "timeout_ms": "1000"}, tool.CodeInvalidParams, "timeout_ms"},
		refused: contractCall{map[string]any{"language": "python", "code": "print(1)", "files": []any{"upl_nope"}}, tool.CodeFileNotFound, ""}},
	"execute_command": {invalid: contractCall{map[string]any{"command": "ls", "timeout_ms": true}, tool.CodeInvalidParams, "timeout_ms"},
		refused: contractCall{map[string]any{"command": "ls"}, tool.CodeNotAllowed, ""}},
	"execute_process": {invalid: contractCall{map[string]any{"file": "ls", "args": []any{1}}, tool.CodeInvalidParams, "args[0]"},
		refused: contractCall{map[string]any{"file": "ls"}, tool.CodeNotAllowed, ""}},
	"fork_session": {invalid: contractCall{map[string]any{"session_id": "s", "count": "3"}, tool.CodeInvalidParams, "count"},
		refused: contractCall{map[string]any{"session_id": "nope", "count": 2}, tool.CodeSessionNotFound, ""}},
	"get_execution_log": {invalid: contractCall{map[string]any{"execution_id": 1}, tool.CodeInvalidParams, "execution_id"},
		refused: contractCall{map[string]any{"execution_id": "exe_nope"}, tool.CodeExecutionNotFound, ""}},
	"get_script": {invalid: contractCall{map[string]any{"name": "x", "version": "2"}, tool.CodeInvalidParams, "version"},
		refused: contractCall{map[string]any{"name": "nope"}, tool.CodeScriptNotFound, ""}},
	"install_package": {invalid: contractCall{map[string]any{"package": 1, "language": "python"}, tool.CodeInvalidParams, "package"},
		refused: contractCall{map[string]any{"package": "six", "language": "python", "session_id": "nope"}, tool.CodeSessionNotFound, ""}},
	"list_contexts": {invalid: contractCall{[]any{1}, tool.CodeInvalidParams, "arguments"},
		noRefused: "lists the caller's contexts, refuses nothing"},
	"list_files": {invalid: contractCall{map[string]any{"limit": "10"}, tool.CodeInvalidParams, "limit"},
		refused: contractCall{map[string]any{"session_id": "nope"}, tool.CodeSessionNotFound, ""}},
	"list_scripts": {invalid: contractCall{map[string]any{"tag": 3}, tool.CodeInvalidParams, "tag"},
		refused: contractCall{map[string]any{"language": "cobol"}, tool.CodeInvalidLanguage, ""}},
	"list_sessions": {invalid: contractCall{[]any{1}, tool.CodeInvalidParams, "arguments"},
		noRefused: "lists the caller's sessions, refuses nothing"},
	"pause_session": {invalid: contractCall{map[string]any{"session_id": false}, tool.CodeInvalidParams, "session_id"},
		refused: contractCall{map[string]any{"session_id": "nope"}, tool.CodeSessionNotFound, ""}},
	"resume_session": {invalid: contractCall{map[string]any{"session_id": []any{}}, tool.CodeInvalidParams, "session_id"},
		refused: contractCall{map[string]any{"session_id": "nope"}, tool.CodeSessionNotFound, ""}},
	"run_code": {invalid: contractCall{map[string]any{"code": 1, "context_id": "c"}, tool.CodeInvalidParams, "code"},
		refused: contractCall{map[string]any{"code": "x = 1", "context_id": "nope"}, tool.CodeContextNotFound, ""}},
	"run_script": {invalid: contractCall{map[string]any{"name": "x", "timeout_ms": 1.5}, tool.CodeInvalidParams, "timeout_ms"},
		refused: contractCall{map[string]any{"name": "nope"}, tool.CodeScriptNotFound, ""}},
	"save_script": {invalid: contractCall{map[string]any{"name": "x", "language": "python", "code": "1", "tags": "a"}, tool.CodeInvalidParams, "tags"},
		refused: contractCall{map[string]any{"name": "../x", "language": "python", "code": "1"}, tool.CodeInvalidParams, ""}},
	"search_execution_logs": {invalid: contractCall{map[string]any{"limit": "5"}, tool.CodeInvalidParams, "limit"},
		refused: contractCall{map[string]any{"since": "yesterday"}, tool.CodeInvalidParams, "since"}},
	"search_scripts": {invalid: contractCall{map[string]any{"query": false}, tool.CodeInvalidParams, "query"},
		noRefused: "any query is a search; no match is an empty result"},
	"search_tools": {invalid: contractCall{map[string]any{"query": "x", "limit": "3"}, tool.CodeInvalidParams, "limit"},
		refused: contractCall{map[string]any{"query": " "}, tool.CodeInvalidParams, "query"}},
	"send_to_session": {invalid: contractCall{map[string]any{"session_id": "s", "code": "1", "timeout_ms": "1000"}, tool.CodeInvalidParams, "timeout_ms"},
		refused: contractCall{map[string]any{"session_id": "nope", "code": "1"}, tool.CodeSessionNotFound, ""}},
	"start_session": {invalid: contractCall{map[string]any{"language": 3}, tool.CodeInvalidParams, "language"},
		refused: contractCall{map[string]any{"language": "cobol"}, tool.CodeInvalidParams, ""}},
	"stop_context": {invalid: contractCall{map[string]any{"context_id": 1}, tool.CodeInvalidParams, "context_id"},
		refused: contractCall{map[string]any{"context_id": "nope"}, tool.CodeContextNotFound, ""}},
	"upload_file": {invalid: contractCall{map[string]any{"path": "a", "overwrite": "yes"}, tool.CodeInvalidParams, "overwrite"},
		refused: contractCall{map[string]any{"path": "a", "content": "x", "session_id": "nope"}, tool.CodeSessionNotFound, ""}},
}

// TestErrorContract makes, for every tool the server lists (every toolset
// on, an upstream configured so search_tools is listed), one call with an
// invalid argument and one the tool refuses, and checks that each failure
// has the one shape of docs/errors.md. A tool without a row fails the test.
func TestErrorContract(t *testing.T) {
	s := newFakeServer(t, fakeOptions{upstreams: true})
	cs := tooltest.Connect(t, s.MCP())
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, tl := range list.Tools {
		listed = append(listed, tl.Name)
		row, ok := contractRows[tl.Name]
		if !ok {
			t.Errorf("%s has no row in contractRows: add its invalid-argument and refused calls", tl.Name)
			continue
		}
		t.Run(tl.Name, func(t *testing.T) {
			for _, c := range []struct {
				kind, why string
				call      contractCall
			}{{"invalid", row.noInvalid, row.invalid}, {"refused", row.noRefused, row.refused}} {
				if c.why != "" {
					continue
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tl.Name, Arguments: c.call.args})
				if err != nil {
					t.Fatalf("%s call: %v", c.kind, err)
				}
				checkErrorShape(t, c.kind, tl, res, c.call)
			}
		})
	}
	for name := range contractRows {
		if !slices.Contains(listed, name) {
			t.Errorf("contractRows has %s, which the server does not list", name)
		}
	}
}

// checkErrorShape asserts docs/errors.md's shape: isError, one text content
// that is exactly {"error","code"}, the expected code, and the same object
// (or execute_code's setup_error result) as structured content unless the
// tool's output schema rejects it.
func checkErrorShape(t *testing.T, kind string, tl *mcp.Tool, res *mcp.CallToolResult, want contractCall) {
	t.Helper()
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s: isError %v with %d contents, want an isError result with one text", kind, res.IsError, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T, want text", kind, res.Content[0])
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(text.Text), &obj); err != nil {
		t.Fatalf("%s: text is not the error object: %q", kind, text.Text)
	}
	t.Logf("%s: %s", kind, text.Text)
	msg, _ := obj["error"].(string)
	got := []any{len(obj), obj["code"], msg != "", strings.Contains(msg, want.field)}
	if diff := cmp.Diff([]any{2, want.code, true, true}, got); diff != "" {
		t.Errorf("%s: text %s: [keys code has-message names-%q] (-want +got):\n%s", kind, text.Text, want.field, diff)
	}
	if res.StructuredContent == nil {
		if returnsExecResult(tl) {
			t.Errorf("%s: %s returns execute_code's result, but its failure has no setup_error structured content (does its output schema admit code?)", kind, tl.Name)
		}
		if tl.OutputSchema == nil {
			t.Errorf("%s: no structured content, but %s has no output schema that could reject it", kind, tl.Name)
		}
		return
	}
	b, _ := json.Marshal(res.StructuredContent)
	var sc map[string]any
	_ = json.Unmarshal(b, &sc)
	if sc["status"] == "setup_error" {
		if sc["error_message"] != msg || sc["code"] != want.code {
			t.Errorf("%s: setup_error result %s does not carry the message and code of %s", kind, b, text.Text)
		}
		return
	}
	if diff := cmp.Diff(obj, sc); diff != "" {
		t.Errorf("%s: structured content is not the error object (-text +structured):\n%s", kind, diff)
	}
}

// TestShutdownRefusalShape: a call that arrives after Shutdown began is
// refused as SERVER_NOT_READY in the tool's own error shape (execute_code's
// setup_error result for execute_code).
func TestShutdownRefusalShape(t *testing.T) {
	s := newFakeServer(t, fakeOptions{})
	cs := tooltest.Connect(t, s.MCP())
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tl := range list.Tools {
		tools[tl.Name] = tl
	}
	s.Shutdown(ctx, 0)
	for name, args := range map[string]any{
		"execute_code":  map[string]any{"language": "python", "code": "print(1)"},
		"list_sessions": map[string]any{},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkErrorShape(t, "after shutdown", tools[name], res, contractCall{code: tool.CodeServerNotReady})
	}
}

// returnsExecResult reports whether tl's output schema is execute_code's
// result (it has status and error_message).
func returnsExecResult(tl *mcp.Tool) bool {
	b, _ := json.Marshal(tl.OutputSchema)
	var s struct{ Properties map[string]any }
	_ = json.Unmarshal(b, &s)
	_, status := s.Properties["status"]
	_, msg := s.Properties["error_message"]
	return status && msg
}
