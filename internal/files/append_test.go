package files

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func TestAppendConfinedAndAllOrNothing(t *testing.T) {
	cases := []struct {
		name, path string
		src        io.Reader
		off, max   int64
		wantErr    string // "" = success
		wantFile   string // ok.txt afterwards
	}{
		{"next chunk", "ok.txt", strings.NewReader("more"), 4, 0, "", "finemore"},
		{"empty chunk", "ok.txt", strings.NewReader(""), 4, 0, "", "fine"},
		{"offset short of the end", "ok.txt", strings.NewReader("x"), 2, 0, "holds 4 bytes", "fine"},
		{"offset past the end", "ok.txt", strings.NewReader("x"), 9, 0, "next chunk goes at offset 4", "fine"},
		{"over max", "ok.txt", strings.NewReader("123"), 4, 6, "too large", "fine"},
		{"failing source", "ok.txt", io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(errors.New("cut"))), 4, 0, "cut", "fine"},
		{"missing", "none.txt", strings.NewReader("x"), 0, 0, "no such file", "fine"},
		{"through a dir link", "otherdir/secret.txt", strings.NewReader("x"), 12, 0, "symlink", "fine"},
		{"a file link", "inner-link", strings.NewReader("x"), 4, 0, "symlink", "fine"},
		{"up and out", "up/other/secret.txt", strings.NewReader("x"), 12, 0, "symlink", "fine"},
		{"fifo", "fifo", strings.NewReader("x"), 0, 0, "not a regular file", "fine"},
		{"hard link", "hardlink", strings.NewReader("x"), 12, 0, "hard links", "fine"},
		{"directory", "sub", strings.NewReader("x"), 0, 0, "not a regular file", "fine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, other := hostile(t)
			w, err := r.Append(c.path, c.src, c.off, c.max)
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("Append: %v", err)
			case c.wantErr == "" && w.Size != int64(len(c.wantFile)):
				t.Errorf("Append size %d, want %d", w.Size, len(c.wantFile))
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("Append err = %v, want %q", err, c.wantErr)
			}
			if got, _ := os.ReadFile(filepath.Join(r.Dir(), "ok.txt")); string(got) != c.wantFile {
				t.Errorf("ok.txt = %q, want %q", got, c.wantFile)
			}
			if got, _ := os.ReadFile(filepath.Join(other, "secret.txt")); string(got) != "other-secret" {
				t.Errorf("secret outside the workspace changed: %q", got)
			}
		})
	}
}

func TestAppendOffsetError(t *testing.T) {
	r, _ := hostile(t)
	if _, err := r.Append("ok.txt", strings.NewReader("x"), 1, 0); !errors.Is(err, ErrOffset) {
		t.Fatalf("err = %v, want ErrOffset", err)
	}
}
