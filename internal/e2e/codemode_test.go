package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// codeModeResult mirrors seed 004's output on top of execute_code's fields.
type codeModeResult struct {
	execResult
	Result  any      `json:"result"`
	Logs    []string `json:"logs"`
	Metrics struct {
		ExecutionTimeMs float64 `json:"executionTimeMs"`
		InputSizeBytes  int     `json:"inputSizeBytes"`
		OutputSizeBytes int     `json:"outputSizeBytes"`
	} `json:"metrics"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Line    int    `json:"line"`
		Column  int    `json:"column"`
		Stack   string `json:"stack"`
	} `json:"error"`
}

func TestCodeModeExplicitContextSeed004(t *testing.T) {
	s := start(t)
	commits := []map[string]any{{"date": "2026-11-20", "author": "alice"}, {"date": "2026-11-19", "author": "bob"}, {"date": "2020-01-01", "author": "alice"}}
	code := `
    const lastWeek = commits.filter((c: any) => c.date >= "2026-11-14");
    console.log("filtered", lastWeek.length);
    return { count: lastWeek.length, authors: [...new Set(lastWeek.map((c: any) => c.author))], same: context.commits === commits };
  `
	var r codeModeResult
	res := s.callInto("execute_code", map[string]any{"code": code, "context": map[string]any{"commits": commits}}, &r)
	if res.IsError || r.Error != nil || r.Status != "success" {
		t.Fatalf("got %+v %s", r, text(res))
	}
	got, _ := json.Marshal(r.Result)
	if string(got) != `{"authors":["alice","bob"],"count":2,"same":true}` {
		t.Errorf("result %s", got)
	}
	if len(r.Logs) != 1 || r.Logs[0] != "filtered 2" {
		t.Errorf("logs %q", r.Logs)
	}
	if r.Metrics.InputSizeBytes != len(code) || r.Metrics.OutputSizeBytes != len(got) || r.Metrics.ExecutionTimeMs <= 0 {
		t.Errorf("metrics %+v", r.Metrics)
	}
	var textOut map[string]any
	if err := json.Unmarshal([]byte(text(res)), &textOut); err != nil || textOut["result"] == nil {
		t.Errorf("text content is not the 004 JSON: %v %s", err, text(res))
	}
}

func TestCodeModeErrorsSeed004(t *testing.T) {
	s := start(t)
	cases := []struct {
		name, code string
		args       map[string]any
		typ, msg   string
		line       int
	}{
		{"syntax", "\n    const x = ;  // Syntax error\n  ", nil, "SyntaxError", "Unexpected", 2},
		{"runtime", "const o: any = null;\nreturn o.field;", nil, "RuntimeError", "null", 0},
		{"thrown", "throw new Error('boom')", nil, "RuntimeError", "boom", 0},
		{"timeout", "await new Promise(r => setTimeout(r, 60000));", map[string]any{"timeout": 1}, "TimeoutError", "exceeded 1 second", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"code": c.code, "intent": "test " + c.name}
			for k, v := range c.args {
				args[k] = v
			}
			var r codeModeResult
			res := s.callInto("execute_code", args, &r)
			// 004: a code error is an MCP-compliant error response (isError).
			if !res.IsError || r.Error == nil || r.Error.Type != c.typ || !strings.Contains(r.Error.Message, c.msg) {
				t.Fatalf("got error %+v status %s text %s", r.Error, r.Status, text(res))
			}
			if c.line != 0 && r.Error.Line != c.line {
				t.Errorf("line %d, want %d", r.Error.Line, c.line)
			}
			if r.Success {
				t.Error("a failed code-mode run reported success")
			}
		})
	}
}

func TestCodeModePythonContext(t *testing.T) {
	s := start(t)
	var r codeModeResult
	res := s.callInto("execute_code", map[string]any{"language": "python", "code": "print(a, context['b'])\nreturn a + 1", "context": map[string]any{"a": 1, "b": "x"}}, &r)
	if res.IsError || r.Error != nil {
		t.Fatalf("got %s", text(res))
	}
	if got, _ := json.Marshal(r.Result); string(got) != "2" || len(r.Logs) != 1 || r.Logs[0] != "1 x" {
		t.Errorf("result %s logs %q", got, r.Logs)
	}
	res = s.call("execute_code", map[string]any{"language": "bash", "code": "echo 1", "context": map[string]any{"a": 1}})
	if !res.IsError || !strings.Contains(text(res), "TypeScript/JavaScript or Python") {
		t.Fatalf("bash with context: %s", text(res))
	}
}

// TestCodeModeContractSeed004 covers 004's input validation and result
// rules: empty and oversized code are rejected, context must be an object,
// result is always present, and a non-JSON return value is a RuntimeError.
func TestCodeModeContractSeed004(t *testing.T) {
	s := start(t)
	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"empty", map[string]any{"code": "  \n"}, "code is empty"},
		{"too big", map[string]any{"code": "//" + strings.Repeat("x", 100<<10)}, "100 KB"},
		{"context array", map[string]any{"code": "return 1", "context": []int{1}}, "context"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := s.Session.CallTool(t.Context(), &mcp.CallToolParams{Name: "execute_code", Arguments: c.args})
			if err == nil && (!res.IsError || !strings.Contains(text(res), c.want)) {
				t.Fatalf("not rejected: %s", text(res))
			}
			if err != nil && !strings.Contains(err.Error(), c.want) {
				t.Fatalf("rejected without naming %q: %v", c.want, err)
			}
		})
	}
	var r codeModeResult
	res := s.callInto("execute_code", map[string]any{"code": "console.log('no return')"}, &r)
	if res.IsError || !strings.Contains(text(res), `"result":null`) {
		t.Errorf("result missing when nothing is returned: %s", text(res))
	}
	for _, code := range []string{"return { f: () => 1 }", "return new Map([[1, 2]])", "const o: any = {}; o.o = o; return o"} {
		r = codeModeResult{}
		res = s.callInto("execute_code", map[string]any{"code": code}, &r)
		if !res.IsError || r.Error == nil || r.Error.Type != "RuntimeError" || !strings.Contains(r.Error.Message, "not JSON-serializable") {
			t.Errorf("%s: %s", code, text(res))
		}
	}
}
