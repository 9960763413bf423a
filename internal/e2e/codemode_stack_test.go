package e2e

import (
	"strings"
	"testing"
)

// TestCodeModeStackPointsAtUserCode: a code-mode error reports the line and
// column in the submitted code, and its stack lists only frames of that code
// (no wrapper lines, no node internals).
func TestCodeModeStackPointsAtUserCode(t *testing.T) {
	s := start(t)
	cases := []struct {
		name, code string
		line, col  int
		frames     []string // the stack's "at" lines, in order
	}{
		{"property of null on line 3", "const a = 1;\nconst b = 2;\nconst o: any = null; o.boom;\nreturn a + b;",
			3, 24, []string{"at code:3:24"}},
		{"throw in a function", "type N = number;\nfunction f(n: N) {\n  if (n > 1) throw new Error('deep');\n  return n;\n}\nreturn f(2);",
			3, 20, []string{"at f (code:3:20)", "at code:6:8"}},
		{"after an await", "await new Promise(r => setTimeout(r, 1));\nJSON.parse('{');",
			2, 6, []string{"at JSON.parse (<anonymous>)", "at code:2:6"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r codeModeResult
			res := s.callInto("execute_code", map[string]any{"code": c.code}, &r)
			if !res.IsError || r.Error == nil || r.Error.Type != "RuntimeError" {
				t.Fatalf("not a runtime error: %s", text(res))
			}
			var frames []string
			for _, l := range strings.Split(r.Error.Stack, "\n") {
				if l = strings.TrimSpace(l); strings.HasPrefix(l, "at ") {
					frames = append(frames, l)
				}
			}
			if r.Error.Line != c.line || r.Error.Column != c.col || strings.Join(frames, "\n") != strings.Join(c.frames, "\n") {
				t.Errorf("line %d column %d, want %d %d; stack:\n%s\nwant frames:\n%s", r.Error.Line, r.Error.Column,
					c.line, c.col, r.Error.Stack, strings.Join(c.frames, "\n"))
			}
		})
	}
}

// TestCodeModePythonErrorLine: a Python code-mode error names the line and
// column of the submitted code where it failed, and its stack only the
// code's own frames.
func TestCodeModePythonErrorLine(t *testing.T) {
	s := start(t)
	var r codeModeResult
	res := s.callInto("execute_code", map[string]any{"language": "python",
		"code": "def f(d):\n    return d['missing']\nx = 1\nreturn f({})", "context": map[string]any{"k": 1}}, &r)
	if !res.IsError || r.Error == nil || r.Error.Type != "RuntimeError" {
		t.Fatalf("not a runtime error: %s", text(res))
	}
	if r.Error.Line != 2 || r.Error.Column != 12 || strings.Contains(r.Error.Stack, "__cx") || !strings.Contains(r.Error.Stack, "line 4") {
		t.Errorf("line %d column %d, want 2 12; stack:\n%s", r.Error.Line, r.Error.Column, r.Error.Stack)
	}
}

// TestCodeModeToolErrorStack: an upstream call that fails and is not caught
// reports the line of the call in the submitted code, with none of the
// binding's own frames.
func TestCodeModeToolErrorStack(t *testing.T) {
	f := startWithUpstreams(t, "CODEXEC_TOOL_POLICY=!*.delete_*")
	r, isErr := f.codeMode(t, map[string]any{"code": "const who = \"ada\";\nawait memory.deleteEntities({ entityNames: [who] });",
		"tools": []string{"memory.*"}})
	if !isErr || r.Error == nil {
		t.Fatalf("the denied call did not fail: %+v", r)
	}
	want := "ToolError: tool memory.delete_entities is denied by CODEXEC_TOOL_POLICY"
	if r.Error.Line != 2 || r.Error.Column != 14 || !strings.HasPrefix(r.Error.Stack, want) || !strings.HasSuffix(r.Error.Stack, "\n    at code:2:14") {
		t.Errorf("line %d column %d; stack:\n%s\nwant %q… ending at code:2:14", r.Error.Line, r.Error.Column, r.Error.Stack, want)
	}
}
