package runtime

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	cases := map[string]string{"Python": Python, "js": Node, "javascript": Node, "node": Node, "TS": TypeScript, "bash": Bash, "sh": Bash}
	for in, want := range cases {
		if got, err := Normalize(in); err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := Normalize("ruby"); err == nil || !strings.Contains(err.Error(), "python") {
		t.Errorf("ruby: %v", err)
	}
}

func TestCompileTS(t *testing.T) {
	js, esm, err := CompileTS("const x: number = 1; console.log(x)")
	if err != nil || esm || !strings.Contains(js, "console.log(x)") {
		t.Fatalf("%q %v %v", js, esm, err)
	}
	_, esm, err = CompileTS("const r: number = await Promise.resolve(2); console.log(r)")
	if err != nil || !esm {
		t.Fatalf("top-level await should compile as ESM: %v", err)
	}
	_, _, err = CompileTS("let a = 1;\nlet x: = 5;")
	var ce *CompileError
	if !errors.As(err, &ce) || ce.Line != 2 || ce.Column != 8 {
		t.Fatalf("compile error: %#v", err)
	}
}

func TestBuildLargeCodeUsesFile(t *testing.T) {
	set := &Set{byLang: map[string]Interpreter{Python: {Path: "/usr/bin/python3"}, Bash: {Path: "/bin/bash"}, Node: {Path: "/usr/bin/node"}}}
	small, err := set.Build(Python, "print(1)", []string{"a"})
	if err != nil || len(small.Files) != 0 || small.Argv[1] != "-c" || small.Argv[3] != "a" {
		t.Fatalf("small: %+v %v", small, err)
	}
	big := strings.Repeat("#\n", argLimit)
	p, _ := set.Build(Python, big, []string{"a"})
	if len(p.Files["main.py"]) != len(big) || !strings.HasPrefix(p.Argv[1], "/opt/codexec/program/") || p.Argv[2] != "a" {
		t.Fatalf("big: argv %v files %d", p.Argv, len(p.Files))
	}
	b, _ := set.Build(Bash, "echo $1", []string{"x"})
	if strings.Join(b.Argv, " ") != "/bin/bash -c echo $1 bash x" {
		t.Errorf("bash argv %q", b.Argv)
	}
}

func TestDiscoverFindsRealBinaries(t *testing.T) {
	set := Discover(context.Background(), Overrides{}, os.Getenv("PATH"))
	for _, lang := range []string{Python, Node, Bash} {
		in := set.Get(lang)
		if in.Err != nil {
			t.Skipf("%s not installed: %v", lang, in.Err)
		}
		if isScript(in.Path) {
			t.Errorf("%s resolved to a script %s", lang, in.Path)
		}
	}
	bad := Discover(context.Background(), Overrides{Python: "/nonexistent/python"}, "")
	if bad.Get(Python).Err == nil {
		t.Error("a bad override must make python unavailable")
	}
}
