package scripts

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRemoveStaleTemps(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	files := map[string]bool{ // path below root → kept
		".tmp-index.json-123":                  false,
		"demo/.tmp-script.py-456":              false,
		"demo/versions/1/.tmp-metadata.json-7": false,
		".tenants/abc/demo/.tmp-script.sh-8":   false,
		"demo/script.py":                       true,
		"demo/.tmp-fresh-9":                    true, // young: may be a write in progress
	}
	for p := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if p != "demo/.tmp-fresh-9" {
			if err := os.Chtimes(full, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, err := RemoveStaleTemps(root, time.Minute)
	if err != nil || n != 4 {
		t.Errorf("removed %d, err %v; want 4", n, err)
	}
	var left []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			left = append(left, rel)
		}
		return nil
	})
	sort.Strings(left)
	if d := cmp.Diff([]string{"demo/.tmp-fresh-9", "demo/script.py"}, left); d != "" {
		t.Errorf("files left (-want +got):\n%s", d)
	}
	if n, err := RemoveStaleTemps(filepath.Join(root, "missing"), 0); n != 0 || err != nil {
		t.Errorf("missing root: %d, %v", n, err)
	}
}
