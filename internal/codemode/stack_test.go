package codemode

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/runtime"
)

// TestMapTSStack runs a wrapped program with node in each way codexec starts
// one (inline with -e, and from a main.cjs file when the code is too long
// for one argument) and maps its error's stack back to the submitted code.
func TestMapTSStack(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	code := "const a: number = 1;\nfunction f(o: any) {\n  return o.deep.field;\n}\nreturn f({}) + a;"
	src, err := Wrap(code, nil, WrapOptions{Mark: "\x1eMARK:"})
	if err != nil {
		t.Fatal(err)
	}
	js, esm, err := runtime.CompileTS(src)
	if err != nil || esm {
		t.Fatalf("compile: esm=%v %v", esm, err)
	}
	file := filepath.Join(t.TempDir(), "main.cjs")
	if err := os.WriteFile(file, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "TypeError: Cannot read properties of undefined (reading 'field')\n    at f (code:3:17)\n    at code:5:8"
	for name, args := range map[string][]string{"inline": {"-e", js}, "file": {file}} {
		t.Run(name, func(t *testing.T) {
			out, _ := exec.Command(node, append([]string{"--enable-source-maps"}, args...)...).Output()
			_, frame, ok := strings.Cut(string(out), "\x1eMARK:")
			var f struct{ Params Envelope }
			if !ok || json.Unmarshal([]byte(frame), &f) != nil || f.Params.Error == nil {
				t.Fatalf("no error envelope in %q", out)
			}
			stack, line, col := mapTSStack(f.Params.Error.Stack, src, strings.Count(code, "\n")+1)
			if diff := cmp.Diff(want, stack); diff != "" || line != 3 || col != 17 {
				t.Errorf("line %d column %d, stack (-want +got):\n%s\nfrom:\n%s", line, col, diff, f.Params.Error.Stack)
			}
		})
	}
}
