package tool

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the code table of docs/errors.md")

const errorsDoc = "../../../docs/errors.md"

// codesTable renders Codes as docs/errors.md's table, grouped by class.
func codesTable() string {
	var b strings.Builder
	b.WriteString("| Code | Class | Meaning |\n|---|---|---|\n")
	for _, class := range []Class{ClassInvalid, ClassRefused, ClassNotFound, ClassBusy, ClassInternal} {
		for _, c := range Codes {
			if c.Class == class {
				fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.Code, c.Class, c.Meaning)
			}
		}
	}
	return b.String()
}

var tableRe = regexp.MustCompile(`(?s)(<!-- codes:start[^>]*-->\n).*?(<!-- codes:end -->)`)

// TestErrorsDoc fails when docs/errors.md's code table is not the one
// Codes renders (run with -update to rewrite it).
func TestErrorsDoc(t *testing.T) {
	doc, err := os.ReadFile(errorsDoc)
	if err != nil {
		t.Fatal(err)
	}
	if !tableRe.Match(doc) {
		t.Fatal("docs/errors.md has no codes:start/codes:end markers")
	}
	want := tableRe.ReplaceAll(doc, []byte("${1}"+strings.ReplaceAll(codesTable(), "$", "$$")+"${2}"))
	if *update {
		if err := os.WriteFile(errorsDoc, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(string(want), string(doc)); diff != "" {
		t.Errorf("docs/errors.md is stale; run go test ./internal/mcpserver/tool -run TestErrorsDoc -update (-want +got):\n%s", diff)
	}
}

// TestCodesComplete checks Codes against the codes of package errcode
// (each described once, nothing described that is not a code) and that
// no toolset passes a code as a string literal instead of a constant.
func TestCodesComplete(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../errcode/errcode.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && len(vs.Values) == 1 {
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				v, _ := strconv.Unquote(lit.Value)
				consts = append(consts, v)
			}
		}
		return true
	})
	var listed []string
	for _, c := range Codes {
		if c.Meaning == "" || c.Class == "" {
			t.Errorf("%s: no meaning or class", c.Code)
		}
		listed = append(listed, c.Code)
	}
	slices.Sort(consts)
	slices.Sort(listed)
	if diff := cmp.Diff(consts, listed); diff != "" {
		t.Errorf("Codes and the Code constants differ (-constants +Codes):\n%s", diff)
	}
	literal := regexp.MustCompile(`Coded\("`)
	_ = filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && literal.Match(b) {
			t.Errorf("%s passes a code as a string literal; use a Code constant", p)
		}
		return err
	})
}
