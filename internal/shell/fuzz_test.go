package shell

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzCheckScript: whatever CheckScript accepts, every simple command in the
// script has a literal name on the allowlist (an independent walk of the
// parse tree), and the script parses.
func FuzzCheckScript(f *testing.F) {
	for _, s := range []string{
		"ls", "ls | cat", "ls; rm -rf x", "ls $(whoami)", "ls `id`", "ls | sh", "ls && touch pwned",
		"bash -c 'ls; rm x'", "f() { ls; }", "X=1 ls", "PATH=/tmp ls", "cat <<EOF\n$(rm x)\nEOF",
		"ls <(rm x)", "echo $((x))", "eval ls", "'l's", "ls ${x:-$(rm y)}", "for i in a; do ls; done",
		"[[ -n $x ]] && cat y", "/usr/bin/ls", "./ls", "coproc ls", "sh -ec 'cat'",
	} {
		f.Add(s)
	}
	allowed := map[string]bool{"ls": true, "cat": true, "bash": true, "sh": true, "/usr/bin/ls": true, "/bin/ls": true,
		"/usr/bin/cat": true, "/bin/cat": true, "/usr/local/bin/ls": true, "/usr/local/bin/cat": true,
		"/usr/bin/bash": true, "/bin/bash": true, "/usr/local/bin/bash": true, "/usr/bin/sh": true, "/bin/sh": true, "/usr/local/bin/sh": true}
	allow := NewAllowlist([]string{"ls", "cat", "bash", "sh"}, testPath)
	f.Fuzz(func(t *testing.T, script string) {
		if allow.CheckScript(script) != nil {
			return
		}
		file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
		if err != nil {
			t.Fatalf("accepted a script that does not parse: %q", script)
		}
		syntax.Walk(file, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.CallExpr:
				if len(n.Args) == 0 {
					return true
				}
				name, ok := literal(n.Args[0])
				if !ok || !allowed[filepath.Clean(name)] || strings.ContainsAny(name, "*?[{~\\$`") {
					t.Fatalf("accepted %q with command name %q", script, printWord(n.Args[0]))
				}
			case *syntax.DeclClause, *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CoprocClause:
				t.Fatalf("accepted %q containing %T", script, n)
			}
			return true
		})
	})
}

// FuzzRootsResolve: a cwd accepted under ALLOWED_CWD_ROOTS is an existing
// directory whose canonical path (computed independently) lies within the
// canonical root; nothing outside is ever accepted.
func FuzzRootsResolve(f *testing.F) {
	base, root, _ := tree(f)
	for _, s := range []string{"root", "root/a", "root/link-out", "root/link-in", "root/a/../..", "outside", "/",
		"root/../outside", "root-link/a", "root//a/./", "../" + filepath.Base(base) + "/root", "root/link-out/..", "~", "root/file"} {
		f.Add(s)
	}
	roots := NewRoots([]string{filepath.Join(base, "root-link")}) // the root itself via a symlink
	f.Fuzz(func(t *testing.T, cwd string) {
		if strings.ContainsRune(cwd, 0) {
			return
		}
		got, err := roots.Resolve(cwd, base, filepath.Join(base, "outside"))
		if err != nil || cwd == "" {
			return
		}
		p := cwd
		if p == "~" || strings.HasPrefix(p, "~/") {
			p = filepath.Join(base, "outside", p[1:])
		} else if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		canon, err := filepath.EvalSymlinks(p)
		if err != nil || canon != got {
			t.Fatalf("cwd %q accepted as %q but canonicalises to %q (%v)", cwd, got, canon, err)
		}
		if rel, err := filepath.Rel(root, canon); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Fatalf("cwd %q accepted as %q, outside root %q", cwd, got, root)
		}
		if st, err := os.Stat(got); err != nil || !st.IsDir() {
			t.Fatalf("cwd %q accepted but %q is not a directory", cwd, got)
		}
	})
}
