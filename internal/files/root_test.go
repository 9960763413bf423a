package files

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// hostile builds a workspace with the traps sandboxed code can plant, next
// to a secret outside it.
func hostile(t *testing.T) (*Root, string) {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	other := filepath.Join(base, "other")
	for _, d := range []string{ws, other, filepath.Join(ws, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(other, "secret.txt"), "other-secret")
	write(filepath.Join(ws, "ok.txt"), "fine")
	write(filepath.Join(ws, "sub", "deep.txt"), "deep")
	must(t, os.Symlink("/etc/passwd", filepath.Join(ws, "passwd")))
	must(t, os.Symlink(other, filepath.Join(ws, "otherdir")))
	must(t, os.Symlink("ok.txt", filepath.Join(ws, "inner-link")))
	must(t, os.Symlink("..", filepath.Join(ws, "up")))
	must(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	must(t, os.Link(filepath.Join(other, "secret.txt"), filepath.Join(ws, "hardlink")))
	r, err := OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, other
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReadRefusesEscapes(t *testing.T) {
	r, _ := hostile(t)
	cases := []struct{ path, want string }{
		{"../other/secret.txt", "'..'"},
		{"sub/../../other/secret.txt", "'..'"},
		{"/etc/passwd", "absolute"},
		{"passwd", "symlink"},
		{"otherdir/secret.txt", "symlink"},
		{"inner-link", "symlink"},
		{"up/other/secret.txt", "symlink"},
		{"fifo", "fifo"},
		{"hardlink", "hard links"},
		{"sub", "dir"},
		{"missing.txt", "no such file"},
		{"a\x00b", "NUL"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			data, _, err := r.Read(c.path, 0, 0, 1<<20)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Read(%q) = %q, %v; want an error containing %q", c.path, data, err, c.want)
			}
			if len(data) != 0 {
				t.Fatalf("Read(%q) returned data %q", c.path, data)
			}
		})
	}
}

func TestReadRanges(t *testing.T) {
	r, _ := hostile(t)
	cases := []struct {
		path        string
		off, length int64
		want        string
	}{
		{"ok.txt", 0, 0, "fine"},
		{"./ok.txt", 1, 2, "in"},
		{"sub//deep.txt", 2, 10, "ep"},
		{"ok.txt", 4, 0, ""},
	}
	for _, c := range cases {
		got, _, err := r.Read(c.path, c.off, c.length, 10)
		if err != nil || string(got) != c.want {
			t.Errorf("Read(%q,%d,%d) = %q, %v; want %q", c.path, c.off, c.length, got, err, c.want)
		}
	}
	if _, _, err := r.Read("ok.txt", 0, 4, 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the cap: %v", err)
	}
	if got, e, err := r.Read("ok.txt", 0, 0, 3); err != nil || string(got) != "fin" || e.Size != 4 {
		t.Errorf("capped read = %q %+v %v", got, e, err)
	}
}

func TestWriteConfinedAndAtomic(t *testing.T) {
	r, other := hostile(t)
	cases := []struct {
		path      string
		overwrite bool
		want      string // "" = success
	}{
		{"new/dir/file.bin", false, ""},
		{"ok.txt", false, "exists"},
		{"ok.txt", true, ""},
		{"otherdir/planted.txt", false, "symlink"},
		{"up/x", false, "symlink"},
		{"../x", false, "'..'"},
		{"sub", true, "is a directory"},
		{"passwd", true, ""}, // replaces the link itself, never /etc/passwd
	}
	for _, c := range cases {
		w, err := r.Write(c.path, bytes.NewReader([]byte("DATA")), WriteOptions{Overwrite: c.overwrite})
		if c.want == "" {
			if err != nil || w.Size != 4 {
				t.Errorf("Write(%q) = %+v, %v", c.path, w, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Write(%q) err = %v, want %q", c.path, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(other, "planted.txt")); err == nil {
		t.Fatal("a write escaped through a symlink")
	}
	if b, _ := os.ReadFile("/etc/passwd"); bytes.Equal(b, []byte("DATA")) {
		t.Fatal("/etc/passwd was overwritten")
	}
	got, _, err := r.Read("passwd", 0, 0, 10)
	if err != nil || string(got) != "DATA" {
		t.Fatalf("replaced link: %q %v", got, err)
	}
	l, _ := r.List("", false, 100)
	for _, e := range l.Entries {
		if strings.HasPrefix(filepath.Base(e.Path), ".codexec-upload-") {
			t.Fatalf("temporary file left behind: %s", e.Path)
		}
	}
}

func TestWriteLimit(t *testing.T) {
	r, _ := hostile(t)
	_, err := r.Write("big", strings.NewReader("0123456789"), WriteOptions{Max: 5})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if _, err := r.Stat("big"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a refused write left a file: %v", err)
	}
}

func TestList(t *testing.T) {
	r, _ := hostile(t)
	l, err := r.List("", true, 100)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range l.Entries {
		got[e.Path] = e.Type
	}
	want := map[string]string{"fifo": "fifo", "hardlink": "file", "inner-link": "symlink", "ok.txt": "file",
		"otherdir": "symlink", "passwd": "symlink", "sub": "dir", "sub/deep.txt": "file", "up": "symlink"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("listing (-want +got):\n%s", d)
	}
	if l, _ := r.List("", true, 3); !l.Truncated || len(l.Entries) != 3 {
		t.Fatalf("limit: %+v", l)
	}
	if _, err := r.List("otherdir", false, 10); err == nil {
		t.Fatal("listed through a symlink")
	}
}

func TestClean(t *testing.T) {
	cases := map[string]string{"a/b": "a/b", "./a//b/": "a/b", "": "", ".": "", "a/./b": "a/b"}
	for in, want := range cases {
		if got, err := Clean(in); err != nil || got != want {
			t.Errorf("Clean(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
