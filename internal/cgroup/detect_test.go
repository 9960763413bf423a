package cgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeTree makes files (path relative to a temporary root → contents)
// and returns the root.
func fakeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, body := range files {
		f := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// placed is what place decided, in a form to compare.
type placed struct {
	Version              int
	Controllers, Missing []string
	Parent               string
	Bases                []string // relative to the fake root
	Top                  string   // relative to the fake root
	Usable               bool
}

func placedOf(root string, i Info) placed {
	rel := func(p string) string {
		if p == "" {
			return ""
		}
		r, _ := filepath.Rel(root, p)
		return r
	}
	out := placed{Version: i.Version, Controllers: i.Controllers, Missing: i.Missing, Parent: i.Parent, Top: rel(i.top), Usable: i.Usable()}
	for _, b := range i.bases {
		out.Bases = append(out.Bases, rel(b))
	}
	return out
}

// TestPlace: where groups go, and which controllers they get, for a
// parent (or none) on fake v1 and v2 trees and /proc/self/cgroup texts.
func TestPlace(t *testing.T) {
	uid := os.Geteuid()
	user := "user.slice/user-" + strconv.Itoa(uid) + ".slice/user@" + strconv.Itoa(uid) + ".service"
	v2 := map[string]string{
		"cgroup.controllers":          "cpuset cpu io memory pids",
		"a/cgroup.controllers":        "memory pids cpu",
		"nocpu/cgroup.controllers":    "memory pids",
		user + "/cgroup.controllers":  "cpu memory pids",
		user + "/app.slice/x.scope/f": "",
	}
	v1 := map[string]string{"memory/cgroup.procs": "", "pids/cgroup.procs": "", "cpu/cgroup.procs": "", "freezer/cgroup.procs": ""}
	v1NoFreezer := map[string]string{"memory/cgroup.procs": "", "pids/cgroup.procs": "", "cpu/cgroup.procs": ""}
	inApp := "0::/" + user + "/app.slice/x.scope\n"
	inSession := "0::/user.slice/user-" + strconv.Itoa(uid) + ".slice/session-3.scope\n"
	all := []string{"memory", "pids", "cpu"}
	cases := []struct {
		name   string
		tree   map[string]string
		self   string
		parent string
		want   placed
		reason string // in Reason; "" = none
	}{
		{"v2 parent to make below an existing group", v2, inSession, "/a/b",
			placed{Version: 2, Controllers: all, Parent: "/a/b", Bases: []string{"a/b"}, Top: "a", Usable: true}, ""},
		{"v2 existing parent", v2, inSession, "/a",
			placed{Version: 2, Controllers: all, Parent: "/a", Bases: []string{"a"}, Top: "a", Usable: true}, ""},
		{"v2 parent without cpu", v2, inSession, "/nocpu/x",
			placed{Version: 2, Controllers: []string{"memory", "pids"}, Missing: []string{"cpu"}, Parent: "/nocpu/x", Bases: []string{"nocpu/x"}, Top: "nocpu"}, "Delegate=memory pids cpu"},
		{"v2 user's systemd manager", v2, inApp, "",
			placed{Version: 2, Controllers: all, Parent: "/" + user + "/codexec", Bases: []string{user + "/codexec"}, Top: user, Usable: true}, ""},
		{"v2 outside the user's manager", v2, inSession, "",
			placed{Version: 2}, "not below the user's systemd manager"},
		{"v2 another user's manager", v2, "0::/user.slice/user-7.slice/user@7.service/app.slice/x.scope", "",
			placed{Version: 2}, "user@" + strconv.Itoa(uid) + ".service"},
		{"v1 parent", v1, "4:memory:/\n0::/\n", "/codexec-alice",
			placed{Version: 1, Controllers: v1Controllers, Parent: "/codexec-alice", Bases: []string{"memory/codexec-alice", "pids/codexec-alice", "cpu/codexec-alice", "freezer/codexec-alice"}, Usable: true}, ""},
		{"v1 without parent", v1, "0::/\n", "",
			placed{Version: 1, Controllers: v1Controllers, Bases: []string{"memory", "pids", "cpu", "freezer"}}, "CODEXEC_CGROUP_PARENT is not set"},
		{"v1 without freezer", v1NoFreezer, "", "/p",
			placed{Version: 1, Controllers: all, Missing: []string{"freezer"}, Parent: "/p", Bases: []string{"memory/p", "pids/p", "cpu/p"}}, ""},
		{"relative parent", v1, "", "codexec", placed{}, "absolute"},
		{"parent with ..", v2, "", "/a/../b", placed{}, "absolute"},
		{"no hierarchy", map[string]string{"x": ""}, "", "/p", placed{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := fakeTree(t, c.tree)
			info := host{root: root, self: c.self, uid: uid}.place(c.parent)
			if d := cmp.Diff(c.want, placedOf(root, info)); d != "" {
				t.Errorf("place(%q) (-want +got):\n%s", c.parent, d)
			}
			if !strings.Contains(info.Reason, c.reason) || (c.reason == "") != (info.Reason == "") {
				t.Errorf("Reason = %q, want one with %q", info.Reason, c.reason)
			}
			if info.Reason != "" && (info.Usable() || !strings.Contains(info.String(), info.Reason)) {
				t.Errorf("an Info with a reason is usable or does not say why: %s", info)
			}
		})
	}
}

// A user's manager cgroup is the user's only when owned by the user.
func TestUserManagerOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a directory's owner needs root")
	}
	const uid = 4321
	user := "user.slice/user-4321.slice/user@4321.service"
	root := fakeTree(t, map[string]string{"cgroup.controllers": "cpu memory pids", user + "/cgroup.controllers": "cpu memory pids"})
	h := host{root: root, self: "0::/" + user + "/app.slice/x.scope", uid: uid}
	if _, err := h.userManager(); err == nil || !strings.Contains(err.Error(), "owned by uid 0") {
		t.Errorf("a manager cgroup owned by root, for uid %d: %v, want not delegated", uid, err)
	}
	if err := os.Chown(filepath.Join(root, user), uid, uid); err != nil {
		t.Fatal(err)
	}
	if got, err := h.userManager(); err != nil || got != "/"+user {
		t.Errorf("userManager() = %q, %v; want /%s", got, err, user)
	}
}

// TestV2Path: the unified hierarchy's line is found among v1 lines.
func TestV2Path(t *testing.T) {
	cases := []struct {
		text, want string
		ok         bool
	}{
		{"0::/user.slice/u.scope\n", "/user.slice/u.scope", true},
		{"9:name=systemd:/\n4:memory:/x\n0::/\n", "/", true},
		{"4:memory:/x\n", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, ok := v2Path(c.text)
		if got != c.want || ok != c.ok {
			t.Errorf("v2Path(%q) = %q, %v; want %q, %v", c.text, got, ok, c.want, c.ok)
		}
	}
}

func TestCommonAncestor(t *testing.T) {
	cases := []struct{ a, b, want string }{
		{"/u/user@1.service/app.slice/x.scope", "/u/user@1.service/codexec", "/u/user@1.service"},
		{"/user.slice/session-3.scope", "/codexec-alice", "/"},
		{"/a/b", "/a/b/c", "/a/b"},
		{"/", "/a", "/"},
		{"/ab/c", "/a/c", "/"},
	}
	for _, c := range cases {
		if got := commonAncestor(c.a, c.b); got != c.want {
			t.Errorf("commonAncestor(%q, %q) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

func TestCheckParent(t *testing.T) {
	for p, ok := range map[string]bool{"/codexec-alice": true, "/user.slice/user-1000.slice/user@1000.service/codexec": true,
		"": false, "/": false, "codexec": false, "/a/": false, "/a/../b": false, "/a//b": false} {
		if err := CheckParent(p); (err == nil) != ok {
			t.Errorf("CheckParent(%q) = %v, want ok %v", p, err, ok)
		}
	}
}

// TestEnableDown: controllers are enabled from the top down to the
// directory, only those missing, never above the top.
func TestEnableDown(t *testing.T) {
	root := fakeTree(t, map[string]string{
		"cgroup.subtree_control":         "",
		"top/cgroup.subtree_control":     "memory pids",
		"top/a/cgroup.subtree_control":   "cpu memory pids",
		"top/a/b/cgroup.subtree_control": "",
	})
	if err := enableDown(filepath.Join(root, "top"), filepath.Join(root, "top/a/b")); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range []string{".", "top", "top/a", "top/a/b"} {
		b, _ := os.ReadFile(filepath.Join(root, d, "cgroup.subtree_control"))
		got[d] = string(b)
	}
	// A fake control file is a regular file: a write replaces its start.
	want := map[string]string{".": "", "top": "+cpury pids", "top/a": "cpu memory pids", "top/a/b": "+memory +pids +cpu"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("subtree_control written (-want +got):\n%s", d)
	}
	if err := enableDown(filepath.Join(root, "top"), filepath.Join(root, "elsewhere")); err == nil {
		t.Error("enableDown outside its top succeeded")
	}
}
