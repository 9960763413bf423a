// Package pathguard decides what a caller-supplied directory (working_dir,
// cwd) may be used for. Every check runs on canonical paths — absolute,
// cleaned, every symlink resolved — so "..", symlinks and double slashes
// cannot be used to escape.
//
// A directory is refused when it lies in a forbidden path (the credential
// and system directories every mode refuses: ~/.ssh, ~/.gnupg, ~/.aws,
// ~/.config, /etc, /var, …), in codexec's own state (data, sandbox, log,
// scripts, packages and disk directories, which hold other callers'
// workspaces and files), or is the file-system root. Otherwise it is
// accepted read-only, or read-write when it lies within one of the
// operator's writable roots (CODEXEC_WRITABLE_ROOTS). OwnerRights says whether
// a caller is entitled to have code use an accepted directory with the
// rights of the directory's owner (see there). pathguard only decides;
// the sandbox backends enforce the decision (a read-only mount), and the
// server never changes a caller directory's owner, mode or ACLs.
//
// A Guard is immutable and safe for concurrent use.
package pathguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Options configure a Guard. The zero value refuses only the root and
// grants no write access.
type Options struct {
	// Home expands "~" in paths.
	Home string
	// Forbidden paths are refused with everything below them (see
	// DefaultForbidden).
	Forbidden []string
	// Internal paths are codexec's own state: refused like forbidden ones,
	// with a message that says so.
	Internal []string
	// Writable roots: accepted directories within one of them are writable
	// by sandboxed code; all others are read-only. Roots are resolved at
	// each check, so a root created or re-pointed later is seen as it is.
	Writable []string
	// OwnerRoots are directories below which every caller is entitled to
	// the owner's rights on a directory a non-root user owns
	// (ALLOWED_CWD_ROOTS and CODEXEC_WRITABLE_ROOTS: the operator named
	// them for callers' work).
	OwnerRoots []string
	// PrincipalRoots adds such roots per principal (CODEXEC_PRINCIPAL_ROOTS).
	PrincipalRoots map[string][]string
	// LocalRoots adds such roots for the local caller (stdio): the home of
	// the user who started codexec and its temp directory.
	LocalRoots []string
}

// Guard applies Options to caller-supplied directories.
type Guard struct {
	home       string
	forbidden  []string
	internal   []string
	writable   []string
	ownerRoots []string
	principal  map[string][]string
	local      []string
}

// Dir is an accepted directory.
type Dir struct {
	// Path is canonical.
	Path string
	// Writable is true when Path lies within a writable root.
	Writable bool
	// OwnerRights: code uses Path with the rights of its owner, host
	// OwnerUID:OwnerGID (an idmapped mount). Set by the engine once the
	// caller is entitled (Guard.OwnerRights) and the backend can.
	OwnerRights        bool
	OwnerUID, OwnerGID int
}

// DefaultForbidden returns the credential and system directories refused
// in every mode for the given home and, for every other account's home in
// homes, its credential directories (CredentialDirs): with a directory
// owner's rights (OwnerRights), code could otherwise read another user's
// keys below a root the operator listed for callers' work.
func DefaultForbidden(home string, homes ...string) []string {
	out := append(CredentialDirs(home), "/etc", "/var")
	for _, h := range homes {
		if h != home {
			out = append(out, CredentialDirs(h)...)
		}
	}
	return out
}

// CredentialDirs are the directories below an account's home that hold its
// keys and credentials.
func CredentialDirs(home string) []string {
	return []string{
		filepath.Join(home, ".ssh"), filepath.Join(home, ".gnupg"), filepath.Join(home, ".aws"),
		filepath.Join(home, ".config"), filepath.Join(home, ".annabelle", "data"),
	}
}

// Guards reports whether every credential directory of home is among g's
// forbidden paths, so that code using a directory with the rights of
// home's account can neither be pointed into them nor find them unmasked
// below it.
func (g *Guard) Guards(home string) bool {
	for _, d := range CredentialDirs(home) {
		if !slices.Contains(g.forbidden, filepath.Clean(d)) {
			return false
		}
	}
	return true
}

// New returns a Guard for o.
func New(o Options) *Guard {
	return &Guard{home: o.Home, forbidden: canonicalAll(o.Forbidden), internal: canonicalAll(o.Internal), writable: o.Writable,
		ownerRoots: o.OwnerRoots, principal: o.PrincipalRoots, local: o.LocalRoots}
}

// canonicalAll keeps each path in cleaned form and, when it exists and
// resolves elsewhere, its canonical form too, so symlinked locations are
// caught as well.
func canonicalAll(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		out = append(out, filepath.Clean(p))
		if c, err := filepath.EvalSymlinks(p); err == nil && c != filepath.Clean(p) {
			out = append(out, c)
		}
	}
	return out
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

// Resolve canonicalises dir (relative to base), refuses it if it is not
// usable (see the package comment) and says whether it is writable.
func (g *Guard) Resolve(dir, base string) (Dir, error) {
	c, err := Canonical(dir, base, g.home)
	if err != nil {
		return Dir{}, err
	}
	if err := g.Check(c); err != nil {
		return Dir{}, err
	}
	return Dir{Path: c, Writable: g.writableDir(c)}, nil
}

// Check refuses the canonical directory c if it is the root, forbidden or
// codexec's own state.
func (g *Guard) Check(c string) error {
	if c == "/" {
		return errors.New("/ would expose the whole host file system; name a directory below it")
	}
	for _, f := range g.forbidden {
		if Within(c, f) {
			return fmt.Errorf("%s is inside the forbidden path %s", c, f)
		}
	}
	for _, f := range g.internal {
		if Within(c, f) {
			return fmt.Errorf("%s is inside codexec's own data (%s), which holds other runs' files; omit working_dir to get a fresh workspace", c, f)
		}
	}
	return nil
}

// Caller is who names a directory: the local user of the stdio transport
// (Local), or a principal authenticated over HTTP.
type Caller struct {
	Local     bool
	Principal string
}

// OwnerRights reports whether caller is entitled to have code use the
// accepted canonical directory c, owned by host uid owner, with the
// owner's rights. c must lie within a root the operator listed for it:
//   - for the local caller (stdio: the user who started codexec), its home
//     and the temp directory (LocalRoots);
//   - for this principal, its own roots (PrincipalRoots);
//   - for a directory a non-root user owns, the roots listed for every
//     caller too (OwnerRoots: ALLOWED_CWD_ROOTS, CODEXEC_WRITABLE_ROOTS).
//
// A directory root owns is thus never entitled merely because root owns
// it, nor through a server-wide root, nor through a listed "/": only the
// local caller's own places or a root listed for that very principal
// entitle a root-owned tree. Forbidden paths and codexec's own state are
// refused before this rule (Check), so /etc, /var and the credential
// directories stay refused.
func (g *Guard) OwnerRights(c string, owner int, caller Caller) bool {
	roots := append([]string{}, g.principal[caller.Principal]...)
	if caller.Local {
		roots = append(roots, g.local...)
	}
	if owner != 0 {
		roots = append(roots, g.ownerRoots...)
	}
	for _, r := range roots {
		root, err := filepath.EvalSymlinks(r)
		if err != nil || (root == "/" && owner == 0) {
			continue
		}
		if Within(c, root) {
			return true
		}
	}
	return false
}

// Below lists the forbidden paths and codexec's own state strictly below
// the canonical directory c, relative to it: what a sandbox masks in c and
// what the server must not reach through c either.
func (g *Guard) Below(c string) []string {
	var out []string
	for _, p := range append(append([]string{}, g.forbidden...), g.internal...) {
		if p != c && Within(p, c) {
			rel, err := filepath.Rel(c, p)
			if err == nil && !slices.Contains(out, rel) {
				out = append(out, rel)
			}
		}
	}
	return out
}

// writableDir reports whether c lies within a writable root that resolves.
func (g *Guard) writableDir(c string) bool {
	for _, r := range g.writable {
		root, err := filepath.EvalSymlinks(r)
		if err == nil && Within(c, root) {
			return true
		}
	}
	return false
}

// Within reports whether path equals root or lies below it. Both must be
// clean absolute paths.
func Within(path, root string) bool {
	if root == "/" {
		return true
	}
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}
