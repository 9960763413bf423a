package shell

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/codexec/codexec/internal/errcode"
	"github.com/codexec/codexec/internal/pathguard"
)

// ConfigError is a problem with the server's configuration (for example an
// ALLOWED_CWD_ROOTS entry that does not resolve); the request is rejected.
type ConfigError struct{ Msg string }

// ErrorCode: a broken ALLOWED_CWD_ROOTS is the server's fault.
func (e *ConfigError) ErrorCode() string { return errcode.Internal }

func (e *ConfigError) Error() string { return "server configuration error: " + e.Msg }

// CwdError is a cwd that does not exist or is outside ALLOWED_CWD_ROOTS.
type CwdError struct{ Msg string }

// ErrorCode: the cwd roots are the server's policy.
func (e *CwdError) ErrorCode() string { return errcode.NotAllowed }

func (e *CwdError) Error() string { return e.Msg }

// Roots is the parsed ALLOWED_CWD_ROOTS. The zero value (no roots) does not
// restrict cwd. Roots are canonicalised on every check, so a root that is
// created, removed or re-pointed later is seen as it is now.
type Roots struct {
	roots []string
}

// NewRoots returns the containment check for the given ALLOWED_CWD_ROOTS
// entries.
func NewRoots(roots []string) Roots { return Roots{roots: roots} }

// Restricted reports whether any root is configured.
func (r Roots) Restricted() bool { return len(r.roots) > 0 }

// Canonical resolves every root (relative roots against base). Any root that
// cannot be resolved is a *ConfigError: the operator must fix the setting
// rather than have requests silently escape it.
func (r Roots) Canonical(base string) ([]string, error) {
	out := make([]string, 0, len(r.roots))
	var bad []string
	for _, root := range r.roots {
		p := root
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		c, err := filepath.EvalSymlinks(p)
		if err != nil {
			bad = append(bad, root)
			continue
		}
		out = append(out, c)
	}
	if len(bad) > 0 {
		return nil, &ConfigError{Msg: fmt.Sprintf("ALLOWED_CWD_ROOTS contains roots that cannot be resolved to a canonical path: %s; "+
			"requests with a cwd are rejected until the operator fixes ALLOWED_CWD_ROOTS", strings.Join(bad, ", "))}
	}
	return out, nil
}

// Resolve returns the directory a command runs in. An empty cwd means base
// (the server's working directory) and is not subject to ALLOWED_CWD_ROOTS,
// which applies only to requests that provide cwd. Otherwise cwd is
// made absolute against base, "~" is expanded with home, symlinks and ".."
// are resolved, it must be an existing directory, and when roots are
// configured it must lie within one of them (compared on canonical paths).
func (r Roots) Resolve(cwd, base, home string) (string, error) {
	if cwd == "" {
		return base, nil
	}
	var roots []string
	if r.Restricted() {
		var err error
		if roots, err = r.Canonical(base); err != nil {
			return "", err
		}
	}
	c, err := pathguard.Canonical(cwd, base, home)
	if err != nil {
		return "", &CwdError{Msg: fmt.Sprintf("cwd %q is not usable: %v", cwd, err)}
	}
	if !r.Restricted() {
		return c, nil
	}
	for _, root := range roots {
		if pathguard.Within(c, root) {
			return c, nil
		}
	}
	return "", &CwdError{Msg: fmt.Sprintf("cwd %q (resolved to %s) is not allowed: it is not within ALLOWED_CWD_ROOTS (%s)", cwd, c, strings.Join(roots, ", "))}
}
