package staging

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOwnDirRefusesForeignRoots: a staging root name someone else made
// first in the shared temp directory (a link, a file, another account's
// directory) is refused, not used.
func TestOwnDirRefusesForeignRoots(t *testing.T) {
	base := t.TempDir()
	mine := filepath.Join(base, "mine")
	link := filepath.Join(base, "link")
	file := filepath.Join(base, "file")
	theirs := filepath.Join(base, "theirs")
	for _, d := range []string{mine, theirs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(mine, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := os.Geteuid() == 0 && os.Chown(theirs, 65534, 65534) == nil
	for _, tc := range []struct {
		name, dir string
		ok, skip  bool
	}{
		{"own directory", mine, true, false},
		{"link to it", link, false, false},
		{"a file", file, false, false},
		{"another account's directory", theirs, false, !foreign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip {
				t.Skip("needs root to make a directory of another account")
			}
			if err := ownDir(tc.dir); (err == nil) != tc.ok {
				t.Fatalf("ownDir(%s) = %v, want ok=%v", tc.dir, err, tc.ok)
			}
		})
	}
}
