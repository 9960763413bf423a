package pathguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{".ssh", ".config/app", "work/proj/sub", "data/logs", "data/sandbox/exec_1", "rw/a", "rwlink-target/b"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustLink(t, filepath.Join(home, ".ssh"), filepath.Join(home, "work", "innocent"))
	mustLink(t, "/etc", filepath.Join(home, "work", "etc-link"))
	mustLink(t, filepath.Join(home, "data", "sandbox"), filepath.Join(home, "work", "sb-link"))
	mustLink(t, filepath.Join(home, "rwlink-target"), filepath.Join(home, "rwlink"))
	g := New(Options{Home: home, Forbidden: DefaultForbidden(home), Internal: []string{filepath.Join(home, "data")},
		Writable: []string{filepath.Join(home, "rw"), filepath.Join(home, "rwlink"), filepath.Join(home, "missing")}})
	cases := []struct {
		dir, base string
		writable  bool
		reason    string // "" = accepted
	}{
		{"~/work/proj", "/", false, ""},
		{"proj/sub", filepath.Join(home, "work"), false, ""},
		{"~/rw", "/", true, ""},
		{"~/rw/a", "/", true, ""},
		{"~/rwlink/b", "/", true, ""},
		{"~/rw/a/..", "/", true, ""},
		{"~/rw/../work", "/", false, ""},
		{"~/.ssh", "/", false, "forbidden"},
		{"~/.config/app", "/", false, "forbidden"},
		{"~/work/innocent", "/", false, "forbidden"},
		{"~/work/etc-link", "/", false, "forbidden"},
		{"~/work/proj/../../.ssh", "/", false, "forbidden"},
		{"/etc", "/", false, "forbidden"},
		{"/var/log", "/", false, "forbidden"},
		{"~/data", "/", false, "codexec's own data"},
		{"~/data/sandbox/exec_1", "/", false, "codexec's own data"},
		{"~/work/sb-link", "/", false, "codexec's own data"},
		{"/", "/", false, "whole host"},
		{"~/nope", "/", false, "does not exist"},
		{"", "/", false, "empty"},
	}
	for _, c := range cases {
		got, err := g.Resolve(c.dir, c.base)
		if c.reason == "" {
			if err != nil || !filepath.IsAbs(got.Path) || got.Writable != c.writable {
				t.Errorf("%s: got %+v, %v; want accepted, writable %v", c.dir, got, err, c.writable)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("%s: got %+v, %v; want error containing %q", c.dir, got, err, c.reason)
		}
	}
}

func mustLink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestWithin(t *testing.T) {
	cases := []struct {
		path, root string
		want       bool
	}{
		{"/a/b", "/a", true}, {"/a", "/a", true}, {"/ab", "/a", false}, {"/", "/a", false}, {"/x", "/", true},
	}
	for _, c := range cases {
		if got := Within(c.path, c.root); got != c.want {
			t.Errorf("Within(%q, %q) = %v", c.path, c.root, got)
		}
	}
}
