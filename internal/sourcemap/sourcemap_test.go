package sourcemap

import (
	"testing"

	"github.com/evanw/esbuild/pkg/api"
	"github.com/google/go-cmp/cmp"
)

// TestLookupThroughEsbuild compiles TypeScript whose lines esbuild moves
// (type-only lines vanish, statements are split) and maps a position of each
// marker in the output back to where it is in the source.
func TestLookupThroughEsbuild(t *testing.T) {
	src := "type T = { a: number };\ninterface I { b: string }\nconst x: T = { a: 1 }; const y = x.a + 1;\n\nfunction f(n: number): number {\n  return n * markerTwo;\n}\nconsole.log(f(y), markerThree);\n"
	res := api.Transform(src, api.TransformOptions{Loader: api.LoaderTS, Format: api.FormatCommonJS,
		Sourcemap: api.SourceMapExternal, Sourcefile: "main.ts"})
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	m, err := Parse(res.Map)
	if err != nil {
		t.Fatal(err)
	}
	type pos struct{ Line, Col int }
	for _, c := range []struct {
		marker string
		want   pos
	}{
		{"markerTwo", pos{5, 13}},
		{"markerThree", pos{7, 18}},
		{"x.a", pos{2, 33}},
	} {
		gl, gc := find(string(res.Code), c.marker)
		l, col, ok := m.Lookup(gl, gc)
		if diff := cmp.Diff(c.want, pos{l, col}); diff != "" || !ok {
			t.Errorf("%s at generated %d:%d (-want +got):\n%s", c.marker, gl, gc, diff)
		}
	}
	if _, _, ok := m.Lookup(999, 0); ok {
		t.Error("a line past the end mapped")
	}
}

func find(code, s string) (line, col int) {
	for i := 0; i+len(s) <= len(code); i++ {
		if code[i] == '\n' {
			line, col = line+1, 0
			continue
		}
		if code[i:i+len(s)] == s {
			return line, col
		}
		col++
	}
	return -1, -1
}

func TestParseRejects(t *testing.T) {
	for _, bad := range []string{`{`, `{"version":2,"mappings":""}`, `{"version":3,"mappings":"A!"}`, `{"version":3,"mappings":"g"}`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%s) accepted", bad)
		}
	}
}
