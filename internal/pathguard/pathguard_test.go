package pathguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckDir(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{".ssh", ".config/app", "work/proj", "data/logs"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustLink(t, filepath.Join(home, ".ssh"), filepath.Join(home, "work", "innocent"))
	mustLink(t, "/etc", filepath.Join(home, "work", "etc-link"))
	g := New(home, DefaultForbidden(home, filepath.Join(home, "data", "logs")))
	cases := []struct {
		dir, base string
		ok        bool
		reason    string
	}{
		{"~/work/proj", "/", true, ""},
		{"proj", filepath.Join(home, "work"), true, ""},
		{"~/.ssh", "/", false, "forbidden"},
		{"~/.config/app", "/", false, "forbidden"},
		{"~/work/innocent", "/", false, "forbidden"},
		{"~/work/etc-link", "/", false, "forbidden"},
		{"~/work/proj/../../.ssh", "/", false, "forbidden"},
		{"/etc", "/", false, "forbidden"},
		{"/var/log", "/", false, "forbidden"},
		{"~/data/logs", "/", false, "forbidden"},
		{"~/nope", "/", false, "does not exist"},
		{"", "/", false, "empty"},
	}
	for _, c := range cases {
		got, err := g.CheckDir(c.dir, c.base)
		if c.ok && (err != nil || !filepath.IsAbs(got)) {
			t.Errorf("%s: unexpected error %v", c.dir, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), c.reason)) {
			t.Errorf("%s: got %q, %v; want error containing %q", c.dir, got, err, c.reason)
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
