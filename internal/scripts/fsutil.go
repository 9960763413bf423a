package scripts

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/codexec/codexec/internal/atomicfile"
	"github.com/codexec/codexec/internal/errcode"
)

// MaxNameLen bounds script names so they stay valid directory names.
const MaxNameLen = 100

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ErrInvalid marks (wrapped) errors caused by bad input; nothing was written.
var ErrInvalid = errcode.New(errcode.InvalidParams, "invalid input")

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
// old or the new content (atomicfile.WriteFile), readable by everyone: the
// sandbox user runs saved scripts through a read-only mount.
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0o644)
}
