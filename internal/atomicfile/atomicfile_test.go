package atomicfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/atomicfile/fulldisk"
)

// names lists dir's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteFileReplaces(t *testing.T) {
	tests := []struct {
		name string
		old  []byte // nil: no file before
		data []byte
		perm fs.FileMode
	}{
		{"new file", nil, []byte("hello\n"), 0o644},
		{"replace longer with shorter", bytes.Repeat([]byte("a"), 10000), []byte("b"), 0o600},
		{"replace with empty", []byte("old"), []byte{}, 0o640},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			if tc.old != nil {
				if err := os.WriteFile(path, tc.old, 0o666); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFile(path, tc.data, tc.perm); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.data, got); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			fi, _ := os.Stat(path)
			if fi.Mode().Perm() != tc.perm {
				t.Errorf("mode %v, want %v", fi.Mode().Perm(), tc.perm)
			}
			if diff := cmp.Diff([]string{"f"}, names(t, dir)); diff != "" {
				t.Errorf("directory (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteFileFailureLeavesOldFile(t *testing.T) {
	old := []byte("the old content\n")
	tests := []struct {
		name  string
		setup func(t *testing.T) (path string)
		data  []byte
		want  syscall.Errno
	}{
		{"target is a non-empty directory", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "d")
			_ = os.Mkdir(p, 0o755)
			_ = os.WriteFile(filepath.Join(p, "inside"), old, 0o644)
			return p
		}, []byte("new"), 0},
		{"directory missing", func(t *testing.T) string {
			return filepath.Join(t.TempDir(), "missing", "f")
		}, []byte("new"), syscall.ENOENT},
		{"disk full mid-write", func(t *testing.T) string {
			d := fulldisk.Mount(t, 256<<10)
			p := filepath.Join(d.Dir, "f")
			_ = os.WriteFile(p, old, 0o644)
			d.Fill()
			d.Leave(8 << 10) // some of the new content fits, not all
			return p
		}, bytes.Repeat([]byte("n"), 64<<10), syscall.ENOSPC},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.setup(t)
			var before []string
			if _, err := os.Stat(filepath.Dir(path)); err == nil {
				before = names(t, filepath.Dir(path))
			}
			var prior []byte
			if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
				prior, _ = os.ReadFile(path)
			}
			err := WriteFile(path, tc.data, 0o644)
			if err == nil {
				t.Fatal("WriteFile succeeded")
			}
			if tc.want != 0 && !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if prior != nil {
				got, _ := os.ReadFile(path)
				if diff := cmp.Diff(prior, got); diff != "" {
					t.Errorf("old file changed (-want +got):\n%s", diff)
				}
			}
			if before != nil {
				if diff := cmp.Diff(before, names(t, filepath.Dir(path))); diff != "" {
					t.Errorf("temp file left (-before +after):\n%s", diff)
				}
			}
		})
	}
}

func TestWriteFileConcurrentWritersLeaveOneWholeVersion(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	versions := [][]byte{}
	for i := range 8 {
		versions = append(versions, bytes.Repeat([]byte{'a' + byte(i)}, 100000))
	}
	var wg sync.WaitGroup
	for _, v := range versions {
		wg.Go(func() {
			if err := WriteFile(path, v, 0o644); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, _ := os.ReadFile(path)
	if !slices.ContainsFunc(versions, func(v []byte) bool { return bytes.Equal(v, got) }) {
		t.Errorf("final content (%d bytes) is none of the versions written", len(got))
	}
	if diff := cmp.Diff([]string{"f"}, names(t, dir)); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}
}

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	mk := func(name string, mtime time.Time) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	mk(TempPrefix+"crashed", old)
	mk(TempPrefix+"in-progress", time.Now())
	mk("script.py", old)
	mk(".hidden", old)
	if err := os.Mkdir(filepath.Join(dir, TempPrefix+"a-directory"), 0o755); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveStale(dir, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{TempPrefix + "crashed"}, removed); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	want := []string{TempPrefix + "a-directory", TempPrefix + "in-progress", ".hidden", "script.py"}
	slices.Sort(want)
	if diff := cmp.Diff(want, names(t, dir)); diff != "" {
		t.Errorf("left (-want +got):\n%s", diff)
	}
	if removed, err := RemoveStale(filepath.Join(dir, "missing"), 0); err != nil || removed != nil {
		t.Errorf("missing dir: %v %v", removed, err)
	}
}

func TestCreateTempMatchesPattern(t *testing.T) {
	f, err := CreateTemp(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !IsTemp(filepath.Base(f.Name())) {
		t.Errorf("%s does not match the temp pattern", f.Name())
	}
}
