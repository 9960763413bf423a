//go:build linux

package staging

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/sandbox/mounttemplate"
)

// acquired takes a reference on the staging root for the test, or skips
// where mounts cannot be made.
func acquired(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("staging mounts need root")
	}
	if err := Acquire(); err != nil {
		t.Skipf("no staging root here: %v", err)
	}
	t.Cleanup(Release)
}

// TestStageBindAndRelease: a staged directory and file are reachable at
// the points Bind returns, and Release unmounts and removes them all.
func TestStageBindAndRelease(t *testing.T) {
	acquired(t)
	src := t.TempDir()
	file := filepath.Join(src, "f.txt")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New("test-stage", false)
	if err != nil {
		t.Fatal(err)
	}
	dp, err := s.Bind(src)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := s.Bind(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dp, "f.txt"), fp} {
		if b, err := os.ReadFile(p); err != nil || string(b) != "x" {
			t.Fatalf("%s: %q %v", p, b, err)
		}
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(dp)); !os.IsNotExist(err) {
		t.Fatalf("the stage is still there: %v", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "x" {
		t.Fatalf("the source changed: %q %v", b, err)
	}
}

// TestStageTemplateClones: in template mode Bind clones the source onto the
// next template point of its kind, TakeTrees hands the clones over once,
// and a run needing more points than the template has is refused.
func TestStageTemplateClones(t *testing.T) {
	acquired(t)
	s, err := New("test-tmpl", true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	dir := t.TempDir()
	p, err := s.Bind(dir)
	if err != nil || p != mounttemplate.Point(true, 0) {
		t.Fatalf("Bind = %q, %v; want the first directory point", p, err)
	}
	trees := s.TakeTrees()
	if len(trees) != 1 || trees[0].Dest != p || len(s.TakeTrees()) != 0 {
		t.Fatalf("TakeTrees = %+v", trees)
	}
	_ = trees[0].F.Close()
	for i := 1; i < mounttemplate.Points; i++ {
		if _, err := s.Bind(dir); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Bind(dir); err != ErrNoTemplatePoint {
		t.Fatalf("past the template's points: %v", err)
	}
}

// TestStageAttach: a detached tree the caller made is moved onto a stage
// point (or, in template mode, given the next template point), and Release
// takes it off again.
func TestStageAttach(t *testing.T) {
	acquired(t)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	clone := func() *os.File {
		fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			t.Skipf("no open_tree here: %v", err)
		}
		return os.NewFile(uintptr(fd), src)
	}
	s, err := New("test-attach", false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Attach(clone())
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(p, "f.txt")); err != nil || string(b) != "x" {
		t.Fatalf("through the attached tree: %q %v", b, err)
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("the point is still there: %v", err)
	}
	tmpl, err := New("test-attach-tmpl", true)
	if err != nil {
		t.Fatal(err)
	}
	defer tmpl.Release()
	if p, err := tmpl.Attach(clone()); err != nil || p != mounttemplate.Point(true, 0) {
		t.Fatalf("template Attach = %q, %v; want the first directory point", p, err)
	}
}
