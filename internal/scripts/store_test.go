package scripts

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codexec/codexec/internal/atomicfile"
)

func TestValidateName(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"parse-excel-report", true}, {"a", true}, {"v1.2_final", true}, {strings.Repeat("x", MaxNameLen), true},
		{"", false}, {".", false}, {"..", false}, {"../x", false}, {"x/y", false}, {`x\y`, false}, {".hidden", false},
		{"a..b", false}, {"-dash", false}, {"sp ace", false}, {"nul\x00", false}, {"ünï", false},
		{strings.Repeat("x", MaxNameLen+1), false}, {"index.json", false}, {"INDEX.JSON", false},
	}
	for _, c := range cases {
		if err := ValidateName(c.name); (err == nil) != c.ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// TestConcurrentSaves saves versions of one script from many goroutines:
// every save gets its own version number and no temp files are left.
func TestConcurrentSaves(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := st.Save(SaveInput{Name: "x", Language: "bash", Code: "echo hi"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	sc, err := st.Get("x", 0)
	if err != nil || sc.Version != 8 || len(sc.Versions) != 8 {
		t.Fatalf("after 8 saves: version %d versions %v err %v", sc.Version, sc.Versions, err)
	}
	_ = filepath.Walk(st.Root(), func(p string, fi os.FileInfo, err error) error {
		if err == nil && atomicfile.IsTemp(fi.Name()) {
			t.Errorf("temp file left: %s", p)
		}
		return nil
	})
}
