package packages

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestBlocklist(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "block.txt")
	if err := os.WriteFile(file, []byte("# known bad\nEvil_Pkg   # typo-squat\n\nnode:left-pad\npython:colourama\n@bad/scope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, setting, lang, pkg string
		blocked                  bool
	}{
		{"file pep503", file, Python, "evil-pkg==1.0", true},
		{"file pep503 dots", file, Python, "EVIL.PKG", true},
		{"file bare applies to node", file, Node, "evil_pkg", true},
		{"file node only", file, Node, "left-pad@1", true},
		{"file node only not python", file, Python, "left-pad", false},
		{"file python only", file, Python, "colourama", true},
		{"file python only not node", file, Node, "colourama", false},
		{"file scoped", file, Node, "@bad/scope@2", true},
		{"file other", file, Python, "pandas", false},
		{"list", "foo, Bar_Baz ,", Python, "bar-baz", true},
		{"list node case", "foo, Bar_Baz", Node, "FOO@1", true},
		{"list miss", "foo", Python, "foobar", false},
		{"empty", "", Python, "foo", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bl, err := LoadBlocklist(c.setting, dir)
			if err != nil {
				t.Fatal(err)
			}
			s, err := ParseSpec(c.lang, c.pkg)
			if err != nil {
				t.Fatal(err)
			}
			err = bl.Check(s)
			var be *BlockedError
			if got := errors.As(err, &be); got != c.blocked {
				t.Fatalf("blocked = %v (%v), want %v", got, err, c.blocked)
			}
		})
	}
}

func TestBlocklistErrors(t *testing.T) {
	for _, setting := range []string{"/nonexistent/blocklist.txt", "./missing", "foo;bar", "ruby:rails", "a b"} {
		if _, err := LoadBlocklist(setting, t.TempDir()); err == nil {
			t.Errorf("LoadBlocklist(%q) succeeded", setting)
		}
	}
	var nilBL *Blocklist
	if err := nilBL.Check(Spec{Language: Python, Normalized: "x"}); err != nil || nilBL.Len() != 0 {
		t.Errorf("nil blocklist blocks: %v", err)
	}
}

func TestSelectEnv(t *testing.T) {
	in := []string{"PATH=/bin", "HOME=/root", "SECRET=x", "NODE_EXTRA_CA_CERTS=/ca", "PIP_CERT=/ca", "PIP_USER=1",
		"npm_config_registry=r", "npm_config_global=true", "HTTPS_PROXY=p", "PYTHONPATH=/x", "NODE_OPTIONS=--x", "AWS_SECRET_ACCESS_KEY=k"}
	got := SelectEnv(in)
	want := []string{"PATH=/bin", "HOME=/root", "NODE_EXTRA_CA_CERTS=/ca", "PIP_CERT=/ca", "npm_config_registry=r", "HTTPS_PROXY=p"}
	if len(got) != len(want) {
		t.Fatalf("got %v want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v want %v", got, want)
		}
	}
}
