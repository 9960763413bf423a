package warm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/sandbox"
)

// TestParse: which runs a runner can serve, and what its runner is started
// with (Base) against what the run hands over (Code, Args).
func TestParse(t *testing.T) {
	env := []string{"PATH=/usr/bin", "HOME=/w", "PWD=/w"}
	type want struct {
		ok         bool
		kind       string
		argv       []string // Base.Argv without a stub
		stub, exec bool
		code       string
		args       []string
	}
	cases := []struct {
		name string
		spec sandbox.Spec
		want want
	}{
		{"python", sandbox.Spec{Warm: sandbox.WarmPython, Argv: []string{"/usr/bin/python3", "-c", "print(1)", "a"}},
			want{true, sandbox.WarmPython, []string{"/usr/bin/python3", "-c"}, true, false, "print(1)", []string{"a"}}},
		{"node", sandbox.Spec{Warm: sandbox.WarmNode, Argv: []string{"/usr/bin/node", "--x", "-e", "1", "a"}},
			want{true, sandbox.WarmNode, []string{"/usr/bin/node", "--x", "-e"}, true, false, "1", []string{"a"}}},
		{"bash", sandbox.Spec{Warm: sandbox.WarmBash, Argv: []string{"/usr/bin/bash", "-c", "echo $0 $1", "bash", "x"}},
			want{true, sandbox.WarmBash, []string{"/usr/bin/bash", "-c"}, false, true, "echo $0 $1", []string{"bash", "x"}}},
		{"bash script file", sandbox.Spec{Warm: sandbox.WarmBash, Argv: []string{"/usr/bin/bash", "/opt/codexec/program/main.sh"},
			ProgramDir: "/p"}, want{}},
		{"bash without -c", sandbox.Spec{Warm: sandbox.WarmBash, Argv: []string{"/usr/bin/bash", "main.sh"}}, want{}},
		{"network", sandbox.Spec{Warm: sandbox.WarmBash, Argv: []string{"/usr/bin/bash", "-c", "true"}, Network: true}, want{}},
		{"no kind", sandbox.Spec{Argv: []string{"/usr/bin/bash", "-c", "true"}}, want{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.spec.Env = env
			req, ok := Parse(c.spec)
			var got want
			if ok {
				argv := req.Base.Argv
				stub := argv[len(argv)-1] == pythonStub || argv[len(argv)-1] == nodeStub
				if stub {
					argv = argv[:len(argv)-1]
				}
				got = want{ok, req.Kind, argv, stub, req.Exec, req.Code, req.Args}
				if strings.Contains(strings.Join(req.Base.Env, "\n"), "PWD=") || req.Base.Env[0] != "HOME=/nonexistent" {
					t.Errorf("runner environment %q: want HOME=/nonexistent and no PWD", req.Base.Env)
				}
			}
			if d := cmp.Diff(c.want, got, cmp.AllowUnexported(want{})); d != "" {
				t.Errorf("Parse (-want +got):\n%s", d)
			}
		})
	}
}

// TestParseKeys: runs that differ only in code and arguments share a kind;
// python and bash never do.
func TestParseKeys(t *testing.T) {
	key := func(kind string, argv ...string) string {
		req, ok := Parse(sandbox.Spec{Warm: kind, Argv: argv, Env: []string{"PATH=/usr/bin"}})
		if !ok {
			t.Fatalf("%s %q not parsed", kind, argv)
		}
		return req.Key
	}
	a, b := key(sandbox.WarmBash, "/usr/bin/bash", "-c", "echo 1", "bash"), key(sandbox.WarmBash, "/usr/bin/bash", "-c", "ls", "bash", "x")
	if a != b {
		t.Errorf("bash runs with other code have other kinds: %q, %q", a, b)
	}
	if p := key(sandbox.WarmPython, "/usr/bin/python3", "-c", "1"); p == a {
		t.Errorf("python and bash share the kind %q", p)
	}
}
