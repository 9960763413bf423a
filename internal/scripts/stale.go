package scripts

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/atomicfile"
)

// oldTempPrefix starts the temporary files of earlier versions' script
// writes (now atomicfile's, see atomicfile.IsTemp).
const oldTempPrefix = ".tmp-"

// RemoveStaleTemps removes, anywhere below root, the temporary files of
// interrupted atomic writes (a server killed between create and rename)
// last modified more than olderThan ago, and returns how many it removed.
// olderThan spares a write in progress in another server sharing the
// library; pass 0 when none can be writing.
func RemoveStaleTemps(root string, olderThan time.Duration) (int, error) {
	cutoff := time.Now().Add(-olderThan)
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root && os.IsNotExist(err) {
				return filepath.SkipAll
			}
			return nil // a directory removed meanwhile, or unreadable: skip it
		}
		if !d.Type().IsRegular() || !(atomicfile.IsTemp(d.Name()) || strings.HasPrefix(d.Name(), oldTempPrefix)) {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.ModTime().Before(cutoff) && os.Remove(path) == nil {
			n++
		}
		return nil
	})
	return n, err
}
