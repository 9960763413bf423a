package artifacts

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/files"
)

// take snapshots dir through a files.Root, as the engine does.
func take(t *testing.T, dir string) Snapshot {
	t.Helper()
	r, err := files.OpenRoot(dir)
	if err != nil {
		return Take(nil)
	}
	defer r.Close()
	return Take(r)
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "keep.txt"), "a")
	write(t, filepath.Join(dir, "grow.txt"), "a")
	write(t, filepath.Join(dir, "touch.txt"), "a")
	write(t, filepath.Join(dir, "gone.txt"), "a")
	before := take(t, dir)
	write(t, filepath.Join(dir, "grow.txt"), "ab")
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "touch.txt"), future, future); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(dir, "gone.txt"))
	write(t, filepath.Join(dir, "new", "deep", "out.csv"), "x")
	_ = os.Symlink("/etc/passwd", filepath.Join(dir, "link"))
	got := Compare(before, take(t, dir))
	// Bytes: the link's target name (11), out.csv (1), grow.txt (2) and
	// touch.txt (1), as they are after the run.
	want := Diff{Created: []string{"link", "new/deep/out.csv"}, Modified: []string{"grow.txt", "touch.txt"}, Deleted: []string{"gone.txt"},
		Bytes: 15}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestBounds(t *testing.T) {
	dir := t.TempDir()
	deep := dir
	for i := 0; i < MaxDepth+3; i++ {
		deep = filepath.Join(deep, "d")
	}
	write(t, filepath.Join(deep, "f"), "x")
	if s := take(t, dir); !s.Partial || len(s.files) != 0 {
		t.Errorf("depth bound not applied: partial=%v files=%d", s.Partial, len(s.files))
	}
	if s := take(t, filepath.Join(dir, "missing")); s.Partial || len(s.files) != 0 {
		t.Error("missing dir should give an empty snapshot")
	}
	d := Compare(Snapshot{}, Snapshot{})
	if d.Created == nil || d.Modified == nil || d.Deleted == nil {
		t.Error("empty diff must have non-nil slices")
	}
}
