package codemode

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBindings(t *testing.T) {
	ctx := map[string]any{"commits": 1, "user_id": 2, "$x": 3, "bad-key": 4, "1st": 5, "class": 6, "context": 7, "__cxLogs": 8, "process": 9}
	if diff := cmp.Diff([]string{"$x", "commits", "user_id"}, Bindings(ctx)); diff != "" {
		t.Error(diff)
	}
}

func TestWrapKeepsUserLinesAfterOffset(t *testing.T) {
	src, err := Wrap("line one\nline two", map[string]any{"a": "x\"y`${z}"}, WrapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(src, "\n")
	if lines[LineOffset] != "line one" || lines[LineOffset+1] != "line two" {
		t.Fatalf("user code not at line %d: %q", LineOffset+1, lines[:3])
	}
	if _, err := Wrap("x", map[string]any{"f": func() {}}, WrapOptions{}); err == nil {
		t.Error("a non-JSON context must be rejected")
	}
}

func TestDecode(t *testing.T) {
	env, err := Decode([]byte(`{"ok":true,"result":{"n":1}}`))
	if err != nil || !env.OK || string(env.Result) != `{"n":1}` || env.Logs == nil {
		t.Fatalf("%+v %v", env, err)
	}
	if _, err := Decode([]byte(`{"ok":tru`)); err == nil {
		t.Error("torn envelope accepted")
	}
}
