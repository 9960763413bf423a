package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/confine"
	"github.com/codexec/codexec/internal/pathguard"
	"github.com/codexec/codexec/internal/rootless"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/tenant"
)

// A caller's directory in an isolated mode is used by the code either with
// the sandbox user's own rights (a plain mount) or, when the caller is
// entitled to it (pathguard.Guard.OwnerRights), with the rights of the
// directory's owner on that mount only (an idmapped mount the backend
// makes, sandbox.Spec.DirOwner). The server then acts on the workspace
// (uploads, artifacts, downloads) with those same rights and no more
// (rightsOn). A directory the code could not even read is refused before
// anything runs, saying why and how to fix it.

// ErrDirUnusable is wrapped by the refusal of a caller's directory that
// the code could not read.
var ErrDirUnusable = errors.New("directory not usable by sandboxed code")

// ownerRights decides how the code may use the accepted directory d for
// ctx's caller (see above).
func (e *Engine) ownerRights(ctx context.Context, d pathguard.Dir) (pathguard.Dir, error) {
	if !e.backend.Isolated() {
		return d, nil
	}
	fi, err := os.Stat(d.Path)
	if err != nil {
		return d, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return d, nil
	}
	d.OwnerUID, d.OwnerGID = int(st.Uid), int(st.Gid)
	sandboxUID, _ := e.backend.User().IDs()
	if d.OwnerUID == sandboxUID {
		return d, nil // the sandbox user's own: nothing to map
	}
	p := tenant.From(ctx)
	var why string
	if !e.guardsAccount(d.OwnerUID) {
		why = fmt.Sprintf("codexec does not know the credential directories of its owner (uid %d, an account added "+
			"since codexec started): restart codexec, or let others read the directory (chmod o+rx %s)", d.OwnerUID, d.Path)
	} else if e.guard.OwnerRights(d.Path, d.OwnerUID, pathguard.Caller{Local: p == tenant.Local, Principal: p}) {
		err := e.checkOwnerMount(d)
		if err == nil {
			d.OwnerRights = true
			return d, nil
		}
		why = fmt.Sprintf("it cannot be mounted with its owner's rights here (%v); use a directory on a local file system "+
			"that supports idmapped mounts (ext4, xfs, btrfs, tmpfs) or let others read it (chmod o+rx %s)", err, d.Path)
	} else {
		why = "the code gets a directory owner's rights only where the caller is entitled to them " +
			"(over stdio: below the home or temp directory of the user who started codexec; for any caller: below its " +
			"CODEXEC_PRINCIPAL_ROOTS, or for a directory a non-root user owns below ALLOWED_CWD_ROOTS or " +
			"CODEXEC_WRITABLE_ROOTS); an operator can list it there, or let others read it (chmod o+rx " + d.Path + ")"
	}
	if e.userCan(d.Path, e.backend.User(), unix.R_OK|unix.X_OK) {
		return d, nil
	}
	return d, fmt.Errorf("%w: %s (%s, mode %04o) cannot be read by the sandbox user (uid %d), and %s",
		ErrDirUnusable, d.Path, rootless.OwnerText(d.OwnerUID), fi.Mode().Perm(), sandboxUID, why)
}

// guardsAccount reports whether the credential directories of host uid's
// account (if it has one) are forbidden paths, so that code with its rights
// can reach none of them. A uid without an account has none.
func (e *Engine) guardsAccount(uid int) bool {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return true
	}
	return e.guard.Guards(u.HomeDir)
}

// checkOwnerMount asks the backend whether it can mount d with its owner's
// rights.
func (e *Engine) checkOwnerMount(d pathguard.Dir) error {
	m, ok := e.backend.(sandbox.OwnerMounter)
	if !ok {
		return fmt.Errorf("the %s sandbox cannot", e.backend.Name())
	}
	return m.CheckOwnerMount(d.Path, sandbox.Owner{UID: d.OwnerUID, GID: d.OwnerGID})
}

// dirOwner is the sandbox.Spec.DirOwner for d.
func dirOwner(d pathguard.Dir) *sandbox.Owner {
	if !d.OwnerRights {
		return nil
	}
	return &sandbox.Owner{UID: d.OwnerUID, GID: d.OwnerGID}
}

// rightsOn is whose rights the server acts with on the workspace d: the
// owner's where the code has them (confine drops root's capabilities, so a
// root owner's permission bits are checked too), else the sandbox user's.
func (e *Engine) rightsOn(d pathguard.Dir) confine.Identity {
	if d.OwnerRights {
		return confine.As(d.OwnerUID, d.OwnerGID)
	}
	return e.backend.User()
}

// userCan reports whether as may access dir itself with mode (unix.R_OK,
// W_OK, X_OK; the sandbox reaches dir through a mount, whatever its
// parents allow).
func (e *Engine) userCan(dir string, as confine.Identity, mode uint32) bool {
	fd, err := unix.Open(dir, openDirFlags, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return as.Do(func() error { return unix.Faccessat(fd, ".", mode, unix.AT_EACCESS) }) == nil
}
