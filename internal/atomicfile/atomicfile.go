// Package atomicfile replaces files so that readers, and a crash at any
// moment, see either the whole old content or the whole new one — never a
// mix, never a truncated file. It is the one way codexec rewrites a file it
// owns (script library, log retention, artifact store metadata, support
// files).
//
// WriteFile writes a temporary file in the target's own directory (a rename
// is atomic only within one file system), fsyncs it, renames it over the
// target and fsyncs the directory so the rename itself survives a power
// loss. Any failure — a full disk, a read-only file system — removes the
// temporary file and leaves the target exactly as it was.
//
// Every temporary file this package creates is named TempPrefix followed by
// random characters, so the ones a crash leaves behind are recognisable:
// RemoveStale deletes them. Files written into a sandbox workspace are not
// this package's business: those go through the workspace's confined root
// (package files), which must not follow links.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// TempPrefix starts the name of every temporary file the package creates
// (".codexec-tmp-" then random characters). Its leading dot hides the file
// from directory listings that skip dotfiles, as the script library does.
const TempPrefix = ".codexec-tmp-"

// WriteFile replaces path with data, mode perm (not narrowed by the umask).
// On success the new content and the name are durable; on error path is
// untouched (or absent if it was) and no temporary file is left.
func WriteFile(path string, data []byte, perm fs.FileMode) (retErr error) {
	dir := filepath.Dir(path)
	f, err := CreateTemp(dir)
	if err != nil {
		return err
	}
	defer func() {
		if retErr != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm.Perm()); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// CreateTemp creates a new empty file (mode 0600) in dir whose name matches
// the package's temporary-file pattern, for callers that need a scratch
// file RemoveStale may clean up after a crash. The caller removes it.
func CreateTemp(dir string) (*os.File, error) {
	return os.CreateTemp(dir, TempPrefix+"*")
}

// SyncDir makes the entries created, renamed or removed in dir durable.
// File systems that cannot fsync a directory (EINVAL) are not an error:
// they give no stronger guarantee to ask for.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// IsTemp reports whether name (a base name) is one of the package's
// temporary files.
func IsTemp(name string) bool { return strings.HasPrefix(name, TempPrefix) }

// RemoveStale removes the temporary files in dir (not below it) that were
// last modified more than olderThan ago: those left by a crash in the middle
// of WriteFile. olderThan spares a write still in progress in another
// process sharing dir; pass 0 when nothing else can be writing. It returns
// the names removed; a missing dir is not an error.
func RemoveStale(dir string, olderThan time.Duration) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cutoff := time.Now().Add(-olderThan)
	var removed []string
	var errs []error
	for _, e := range ents {
		if !IsTemp(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.ModTime().After(cutoff) {
			continue // gone meanwhile, or possibly still being written
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}
