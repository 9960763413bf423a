package pathguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// TestOwnerRights: who is entitled to a directory owner's rights (see
// OwnerRights and SECURITY.md's table).
func TestOwnerRights(t *testing.T) {
	base := t.TempDir()
	home, tmp, listed, alice, shared := mkdirs(t, base, "home"), mkdirs(t, base, "tmp"), mkdirs(t, base, "listed"),
		mkdirs(t, base, "alice"), mkdirs(t, base, "elsewhere")
	g := New(Options{LocalRoots: []string{home, tmp}, OwnerRoots: []string{listed, "/"},
		PrincipalRoots: map[string][]string{"alice": {alice}}})
	local, aliceC, bob := Caller{Local: true, Principal: "local"}, Caller{Principal: "alice"}, Caller{Principal: "bob"}
	cases := []struct {
		name   string
		dir    string
		owner  int
		caller Caller
		want   bool
	}{
		{"local, own temp dir, root-owned", tmp + "/x", 0, local, true},
		{"local, home, other owner", home, 1234, local, true},
		{"local, elsewhere, root-owned: not through a listed /", shared, 0, local, false},
		{"local, elsewhere, non-root through the server-wide roots", shared, 1234, local, true},
		{"principal, its own root, root-owned", alice + "/p", 0, aliceC, true},
		{"principal, another principal's root", alice, 1234, bob, true}, // through the server-wide "/"
		{"principal, another principal's root, root-owned", alice, 0, bob, false},
		{"principal, server-wide root, root-owned", listed, 0, bob, false},
		{"principal, server-wide root, non-root", listed + "/d", 1234, bob, true},
		{"principal, the local caller's temp dir", tmp, 0, bob, false},
	}
	for _, c := range cases {
		if got := g.OwnerRights(c.dir, c.owner, c.caller); got != c.want {
			t.Errorf("%s: OwnerRights(%s, %d) = %v, want %v", c.name, c.dir, c.owner, got, c.want)
		}
	}
}

// TestBelow lists the forbidden and internal paths strictly below a
// directory, relative to it.
func TestBelow(t *testing.T) {
	g := New(Options{Forbidden: []string{"/h/.ssh", "/etc"}, Internal: []string{"/h/data/x", "/h"}})
	if diff := cmp.Diff([]string{".ssh", "data/x"}, g.Below("/h")); diff != "" {
		t.Errorf("Below(/h) (-want +got):\n%s", diff)
	}
	if got := g.Below("/elsewhere"); len(got) != 0 {
		t.Errorf("Below(/elsewhere) = %v", got)
	}
}

func mkdirs(t *testing.T, base, name string) string {
	t.Helper()
	d := filepath.Join(base, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestOtherAccountsCredentials: the credential directories of every account
// passed to DefaultForbidden are refused and listed below a directory that
// holds them, whoever started codexec; Guards tells which homes are covered.
func TestOtherAccountsCredentials(t *testing.T) {
	root := t.TempDir()
	self, bob, carol := filepath.Join(root, "self"), filepath.Join(root, "home", "bob"), filepath.Join(root, "home", "carol")
	for _, d := range []string{self, filepath.Join(bob, ".ssh"), filepath.Join(bob, ".aws"), filepath.Join(bob, "work"),
		filepath.Join(carol, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	g := New(Options{Home: self, Forbidden: DefaultForbidden(self, bob, self)})
	for _, c := range []struct {
		dir  string
		want string // "" = accepted
	}{
		{filepath.Join(bob, ".ssh"), "forbidden"},
		{filepath.Join(bob, ".aws"), "forbidden"},
		{filepath.Join(bob, "work"), ""},
		{bob, ""},
		{filepath.Join(carol, ".ssh"), ""}, // not an account passed in
	} {
		_, err := g.Resolve(c.dir, "/")
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Resolve(%s) = %v, want %q", c.dir, err, c.want)
		}
	}
	if diff := cmp.Diff([]string{".ssh", ".gnupg", ".aws", ".config", ".annabelle/data"}, g.Below(bob)); diff != "" {
		t.Errorf("Below(bob's home) (-want +got):\n%s", diff)
	}
	for home, want := range map[string]bool{self: true, bob: true, carol: false, bob + "/": true} {
		if got := g.Guards(home); got != want {
			t.Errorf("Guards(%s) = %v, want %v", home, got, want)
		}
	}
}
