package packages

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSpecValid(t *testing.T) {
	cases := []struct {
		lang, raw string
		want      Spec
	}{
		{Python, "pandas", Spec{Language: Python, Name: "pandas", Normalized: "pandas"}},
		{Python, "pandas==2.2.1", Spec{Language: Python, Name: "pandas", Normalized: "pandas", Version: "==2.2.1"}},
		{Python, "numpy>=1.26,<2", Spec{Language: Python, Name: "numpy", Normalized: "numpy", Version: ">=1.26,<2"}},
		{Python, "Zope.Interface~=5.0", Spec{Language: Python, Name: "Zope.Interface", Normalized: "zope-interface", Version: "~=5.0"}},
		{Python, "requests[socks,security]!=2.0.*", Spec{Language: Python, Name: "requests", Normalized: "requests", Extras: []string{"socks", "security"}, Version: "!=2.0.*"}},
		{Python, "typing_extensions", Spec{Language: Python, Name: "typing_extensions", Normalized: "typing-extensions"}},
		{Python, "x===1.0+local", Spec{Language: Python, Name: "x", Normalized: "x", Version: "===1.0+local"}},
		{Node, "is-number", Spec{Language: Node, Name: "is-number", Normalized: "is-number"}},
		{Node, "lodash@4", Spec{Language: Node, Name: "lodash", Normalized: "lodash", Version: "4"}},
		{Node, "lodash@^4.17.0", Spec{Language: Node, Name: "lodash", Normalized: "lodash", Version: "^4.17.0"}},
		{Node, "@types/node@>=20", Spec{Language: Node, Name: "@types/node", Normalized: "@types/node", Version: ">=20"}},
		{Node, "@babel/core", Spec{Language: Node, Name: "@babel/core", Normalized: "@babel/core"}},
		{Node, "JSONStream@latest", Spec{Language: Node, Name: "JSONStream", Normalized: "jsonstream", Version: "latest"}},
		{Node, "x@1||2", Spec{Language: Node, Name: "x", Normalized: "x", Version: "1||2"}},
		{Node, "lodash.merge@4.x", Spec{Language: Node, Name: "lodash.merge", Normalized: "lodash.merge", Version: "4.x"}},
	}
	for _, c := range cases {
		t.Run(c.lang+"/"+c.raw, func(t *testing.T) {
			got, err := ParseSpec(c.lang, c.raw)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.Arg() != c.raw {
				t.Errorf("Arg() = %q, want %q", got.Arg(), c.raw)
			}
		})
	}
}

func TestParseSpecRejects(t *testing.T) {
	bad := []string{
		"", "foo; rm -rf /", "foo bar", " foo", "foo\n", "foo\tbar", "--index-url=http://evil", "-e", "-r",
		"--extra-index-url", "https://evil.example/x.whl", "http://evil", "git+https://github.com/a/b", "./pkg",
		"../pkg", "/tmp/pkg", "~/pkg", "pkg.whl", "pkg.tar.gz", "pkg.tgz", "pkg.zip", "foo$(id)", "foo`id`", "foo|sh",
		"foo&&id", "foo>x", "a'b", `a"b`, "foo @ https://x", "foo@https://x", "pkg;python_version<'3'", "foo\\bar",
		"_private", ".hidden", "foo==", "foo=>1", "foo[", "foo[bad extra]", "naïve", strings.Repeat("a", 300),
		"foo@", "@", "@scope", "@scope/", "@/x", "foo@git+ssh://x", "foo@npm:bar", "foo@file:../x", "foo@github:a/b",
		"foo@1 <2", "a/b", "foo#bar", "foo?x", "foo%20",
	}
	for _, lang := range []string{Python, Node} {
		for _, raw := range bad {
			if s, err := ParseSpec(lang, raw); err == nil {
				t.Errorf("%s %q accepted as %+v", lang, raw, s)
			}
		}
	}
	for _, raw := range []string{"node_modules", "favicon.ico", "@a/node_modules"} {
		if _, err := ParseSpec(Node, raw); err == nil {
			t.Errorf("node %q accepted", raw)
		}
	}
	if _, err := ParseSpec("ruby", "rails"); err == nil {
		t.Error("unknown language accepted")
	}
}

// FuzzParseSpec checks that whatever is accepted is a safe installer argument:
// no whitespace or shell/URL/path syntax, never an option, and it round-trips.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"pandas==2.2.1", "numpy>=1.26,<2", "lodash@4", "@types/node@^20", "a[b]>1", "--x", "foo; rm -rf /"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, lang := range []string{Python, Node} {
			s, err := ParseSpec(lang, raw)
			if err != nil {
				continue
			}
			arg := s.Arg()
			if arg != raw {
				t.Fatalf("%s %q: Arg() = %q", lang, raw, arg)
			}
			if strings.HasPrefix(arg, "-") || strings.ContainsAny(arg, " \t\n\r;&$`'\"\\:#?%()") || strings.Contains(arg, "..") && strings.Contains(arg, "/") {
				t.Fatalf("%s %q accepted but unsafe", lang, raw)
			}
			if lang == Python && strings.Contains(arg, "/") {
				t.Fatalf("python %q contains a path separator", raw)
			}
		}
	})
}
