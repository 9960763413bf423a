package scripts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// MaxNameLen bounds script names so they stay valid directory names.
const MaxNameLen = 100

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ErrInvalid marks (wrapped) errors caused by bad input; nothing was written.
var ErrInvalid = errors.New("invalid input")

// ValidateName rejects names that could escape the library directory or
// collide with its bookkeeping files: path separators, "..", hidden
// (leading-dot) names, characters outside [A-Za-z0-9._-], and names longer
// than MaxNameLen.
func ValidateName(name string) error {
	if err := nameError(name); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

func nameError(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("script name is required")
	case len(name) > MaxNameLen:
		return fmt.Errorf("script name is %d characters long; the limit is %d", len(name), MaxNameLen)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("script name %q must not contain path separators", name)
	case strings.Contains(name, ".."):
		return fmt.Errorf("script name %q must not contain \"..\"", name)
	case !nameRE.MatchString(name):
		return fmt.Errorf("script name %q must start with a letter or digit and use only letters, digits, '.', '_' and '-'", name)
	case strings.EqualFold(name, indexFile):
		return fmt.Errorf("script name %q is reserved", name)
	}
	return nil
}

// writeFileAtomic replaces path with data so that a crash leaves either the
// old or the new content: temp file in the same directory, fsync, rename,
// fsync of the directory.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename or create in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
