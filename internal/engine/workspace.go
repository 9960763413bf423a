package engine

import (
	"context"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/artifacts"
	"github.com/codexec/codexec/internal/diskbound"
	"github.com/codexec/codexec/internal/errcode"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/pathguard"
)

// Workspace is the directory a run or session works in: a caller's
// working_dir checked against the server's policy, or a fresh directory of
// codexec's own; with its bounded disk (see Options.Disks). Close releases
// it. A Workspace is used by one run or session at a time.
type Workspace struct {
	// Dir is the directory and whether its code may write it.
	Dir pathguard.Dir
	// Owned: codexec created Dir.Path, so Close removes it and the bounded
	// disk bounds it whole (a caller's directory only gets a bounded /tmp).
	Owned bool
	// fresh: made by Workspace for this run and not yet used (empty).
	fresh bool
	given string
	disk  *diskbound.Disk
	e     *Engine
	once  sync.Once
}

// Workspace returns the workspace of a run or session: workingDir when
// given (an error when the policy refuses it), else a fresh directory
// named name under SandboxDir.
func (e *Engine) Workspace(ctx context.Context, name, workingDir string) (*Workspace, error) {
	if workingDir != "" {
		dir, err := e.ResolveDir(ctx, workingDir)
		if err != nil {
			return nil, errcode.New(errcode.InvalidParams, "working_dir rejected: %w", err)
		}
		return e.workspaceAt(dir, workingDir, false)
	}
	dir, err := e.newDir(name)
	if err != nil {
		return nil, err
	}
	w, err := e.workspaceAt(pathguard.Dir{Path: dir, Writable: true}, "", true)
	if err == nil {
		w.fresh = true
	}
	return w, err
}

// workspaceAt bounds the disk of dir (see BoundDisk); an owned dir is
// removed when that fails.
func (e *Engine) workspaceAt(dir pathguard.Dir, given string, owned bool) (*Workspace, error) {
	disk, err := e.boundDisk(dir.Path, owned)
	if err != nil {
		if owned {
			_ = e.removeDir(dir.Path)
		}
		return nil, err
	}
	return &Workspace{Dir: dir, Owned: owned, given: given, disk: disk, e: e}, nil
}

// Close releases the bounded disk and removes an owned directory; the
// programs that used the workspace must be gone. Later calls do nothing.
func (w *Workspace) Close() {
	w.once.Do(func() {
		releaseDisk(w.disk)
		if w.Owned {
			_ = w.e.removeDir(w.Dir.Path)
		}
	})
}

// Open opens the workspace for the server to act on with the code's
// rights (files.OpenWorkspace, rightsOn): placing uploads, taking artifact
// snapshots. In a caller's directory the forbidden paths and codexec's own
// state below it do not exist for it, as the sandbox masks them. The
// caller closes it.
func (w *Workspace) Open() (*files.Root, error) {
	r, err := files.OpenWorkspace(w.Dir.Path, w.e.rightsOn(w.Dir), w.Dir.Writable)
	if err == nil && !w.Owned {
		r.Hide(w.e.guard.Below(w.Dir.Path)...)
	}
	return r, err
}

// Note is what a result says about the caller's working_dir: empty for an
// owned workspace and for a writable directory the sandbox user may really
// write, in isolated modes; otherwise how the code could use it.
func (w *Workspace) Note() string { return w.e.workingDirNote(w.given, w.Dir) }

// NoteDiskFull tells a failed result why when the workspace's disk is full
// (see NoteDiskFull).
func (w *Workspace) NoteDiskFull(res Result) Result { return noteDiskFull(res, w.disk) }

// tmpDir is the host directory the workspace's programs see as /tmp.
func (w *Workspace) tmpDir() string { return tmpDir(w.disk) }

// Changes is a snapshot of a workspace's files taken before its program
// runs (TrackChanges); Apply, after the program, records what it created,
// modified and deleted.
type Changes struct {
	root   *files.Root
	before artifacts.Snapshot
}

// TrackChanges snapshots root, a workspace opened with Open.
func TrackChanges(root *files.Root) Changes {
	return Changes{root: root, before: artifacts.Take(root)}
}

// trackChanges is TrackChanges for the workspace w opened as root: a
// fresh workspace that nothing was placed in (placed: uploads) is known to
// be empty, so it is not walked.
func (w *Workspace) trackChanges(root *files.Root, placed bool) Changes {
	fresh := w.fresh
	w.fresh = false
	if fresh && !placed {
		return Changes{root: root}
	}
	return TrackChanges(root)
}

// Apply sets res's Diff (for the log) and adds the created and modified
// files to its Artifacts.
func (c Changes) Apply(res Result) Result {
	res.Diff = artifacts.Compare(c.before, artifacts.Take(c.root))
	res.Artifacts = append(append(res.Artifacts, res.Diff.Created...), res.Diff.Modified...)
	return res
}

// handOver gives a fresh workspace of codexec's own to the sandbox user, so
// that uploads placed in it with that user's rights (Request.Prepare)
// succeed.
func (e *Engine) handOver(dir string) error {
	u := e.backend.User()
	if u.IsServer() {
		return nil
	}
	uid, gid := u.IDs()
	if err := os.Lchown(dir, uid, gid); err != nil {
		return fmt.Errorf("create workspace: %w", err)
	}
	return nil
}

// ResolveDir checks a caller's directory (working_dir, cwd) against the
// server's policy (see pathguard), says whether code may write it and
// whether code gets its owner's rights there (ownerRights); a directory
// the code could not use at all is refused here, before anything runs.
func (e *Engine) ResolveDir(ctx context.Context, dir string) (pathguard.Dir, error) {
	d, err := e.guard.Resolve(dir, e.opts.BaseDir)
	if err != nil {
		return d, err
	}
	return e.ownerRights(ctx, d)
}

// workingDirNote is what a result says about a caller's directory: empty
// for codexec's own workspaces (given is empty) and for writable
// directories the code may really write, in isolated modes.
func (e *Engine) workingDirNote(given string, dir pathguard.Dir) string {
	switch {
	case given == "":
		return ""
	case !e.backend.Isolated():
		return "subprocess mode: the code ran unconfined with the server's rights; " + dir.Path + " was not protected"
	case !dir.Writable && dir.OwnerRights:
		return fmt.Sprintf("%s is read-only to the code, which reads it with the rights of its owner (uid %d); "+
			"an operator can make it writable with CODEXEC_WRITABLE_ROOTS", dir.Path, dir.OwnerUID)
	case !dir.Writable:
		return dir.Path + " is read-only to the code, which reads it with the sandbox user's rights; an operator can make it writable with CODEXEC_WRITABLE_ROOTS"
	case dir.OwnerRights && !e.userCan(dir.Path, e.rightsOn(dir), unix.W_OK|unix.X_OK):
		return fmt.Sprintf("%s is in CODEXEC_WRITABLE_ROOTS and the code has the rights of its owner (uid %d) there, "+
			"but its mode does not let even the owner write it, and codexec never changes it", dir.Path, dir.OwnerUID)
	case !dir.OwnerRights && !e.userCan(dir.Path, e.backend.User(), unix.W_OK|unix.X_OK):
		uid, _ := e.backend.User().IDs()
		return fmt.Sprintf("%s is in CODEXEC_WRITABLE_ROOTS, but its permissions do not let the sandbox user (uid %d) write it, "+
			"and codexec never changes them: an operator can grant it (e.g. setfacl -m u:%d:rwx %s)", dir.Path, uid, uid, dir.Path)
	}
	return ""
}
