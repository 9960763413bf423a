// Package pathguard canonicalises caller-supplied directories and checks them
// against forbidden paths (seed 000 "Forbidden Paths") and allowed roots (seed
// 002 ALLOWED_CWD_ROOTS). All checks are done on canonical paths: absolute,
// cleaned, with every symlink resolved, so "..", symlinks and double slashes
// cannot be used to escape. A Guard is immutable and safe for concurrent use.
package pathguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Guard holds canonical forbidden paths.
type Guard struct {
	home      string
	forbidden []string
}

// DefaultForbidden returns seed 000's forbidden list for the given home and
// the server's own data directories.
func DefaultForbidden(home string, dataDirs ...string) []string {
	out := []string{
		filepath.Join(home, ".ssh"), filepath.Join(home, ".gnupg"), filepath.Join(home, ".aws"),
		filepath.Join(home, ".config"), "/etc", "/var",
	}
	return append(out, dataDirs...)
}

// New returns a Guard that forbids the given paths and everything below them.
// Paths that do not exist yet are kept in cleaned form; existing ones are
// canonicalised so symlinked locations are caught too. home expands "~".
func New(home string, forbidden []string) *Guard {
	g := &Guard{home: home}
	for _, f := range forbidden {
		g.forbidden = append(g.forbidden, filepath.Clean(f))
		if c, err := filepath.EvalSymlinks(f); err == nil && c != filepath.Clean(f) {
			g.forbidden = append(g.forbidden, c)
		}
	}
	return g
}

// Canonical expands "~", makes p absolute against base, resolves symlinks
// and requires an existing directory.
func Canonical(p, base, home string) (string, error) {
	if p == "" {
		return "", errors.New("path is empty")
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%s does not exist or cannot be resolved", p)
	}
	st, err := os.Stat(c)
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory", p)
	}
	return c, nil
}

// CheckDir canonicalises dir (relative to base) and rejects it if it lies in
// a forbidden path. It returns the canonical path.
func (g *Guard) CheckDir(dir, base string) (string, error) {
	c, err := Canonical(dir, base, g.home)
	if err != nil {
		return "", err
	}
	for _, f := range g.forbidden {
		if Within(c, f) {
			return "", fmt.Errorf("working_dir %s is inside the forbidden path %s", c, f)
		}
	}
	return c, nil
}

// Within reports whether path equals root or lies below it. Both must be
// clean absolute paths.
func Within(path, root string) bool {
	if root == "/" {
		return true
	}
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}
