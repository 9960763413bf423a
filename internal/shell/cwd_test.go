package shell

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree builds base/{root/{a,link-out->outside,link-in->root/a},outside,file}
// and returns canonical base, root and outside.
func tree(t testing.TB) (base, root, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "a"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.Symlink(outside, filepath.Join(root, "link-out")))
	must(t, os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "link-in")))
	must(t, os.Symlink(root, filepath.Join(base, "root-link")))
	must(t, os.WriteFile(filepath.Join(root, "file"), nil, 0o644))
	return base, root, outside
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRootsResolve(t *testing.T) {
	base, root, outside := tree(t)
	cases := []struct {
		roots []string
		cwd   string
		want  string // resolved path, or "error:" + substring
	}{
		{nil, "", base},
		{nil, "root/a", filepath.Join(root, "a")},
		{nil, outside, outside},
		{nil, "missing", "error:does not exist"},
		{nil, "root/file", "error:not a directory"},
		{[]string{root}, "root/a", filepath.Join(root, "a")},
		{[]string{root}, root, root},
		{[]string{root}, "root/link-in", filepath.Join(root, "a")},
		{[]string{root}, "root/link-out", "error:not within ALLOWED_CWD_ROOTS"},
		{[]string{root}, "root/a/../..", "error:not within"},
		{[]string{root}, outside, "error:not within"},
		{[]string{root}, "", base}, // no cwd: server's cwd, roots not applied
		{[]string{filepath.Join(base, "root-link")}, "root/a", filepath.Join(root, "a")},
		{[]string{"root"}, "root/a", filepath.Join(root, "a")},
		{[]string{root + "x"}, "root/a", "error:cannot be resolved"},
		{[]string{root, "/path/that/does/not/exist"}, "root/a", "error:configuration error"},
		{[]string{root, "/path/that/does/not/exist"}, "", base},
	}
	for _, c := range cases {
		got, err := NewRoots(c.roots).Resolve(c.cwd, base, "/nonexistent-home")
		if want, isErr := strings.CutPrefix(c.want, "error:"); isErr {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("roots %v cwd %q: got %q, %v; want error with %q", c.roots, c.cwd, got, err, want)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("roots %v cwd %q: got %q, %v; want %q", c.roots, c.cwd, got, err, c.want)
		}
	}
}

func TestRootsConfigErrorType(t *testing.T) {
	base, _, _ := tree(t)
	_, err := NewRoots([]string{"/no/such/root"}).Resolve("root", base, "")
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("want *ConfigError, got %T %v", err, err)
	}
}
