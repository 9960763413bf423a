package files_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/files/storetest"
)

// TestDirStoreContract runs the shared store suite on the embedded store.
func TestDirStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, o storetest.Options) storetest.Instance {
		dir := filepath.Join(t.TempDir(), "store")
		open := func() *files.DirStore {
			s, err := files.NewDirStore(dir, files.DirOptions{TTL: o.TTL, MaxBytes: o.MaxBytes, Now: o.Now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return s
		}
		s := open()
		return storetest.Instance{
			Store:  s,
			Sweep:  s.Sweep,
			Holds:  func(id string) bool { _, err := os.Lstat(filepath.Join(dir, id)); return err == nil },
			Reopen: func() files.Store { return open() },
		}
	})
}
