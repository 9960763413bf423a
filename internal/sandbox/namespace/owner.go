//go:build linux

package namespace

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/warm"
)

// A caller's directory mounted with its owner's rights (Spec.DirOwner) is
// an idmapped clone (package idmap) wherever a plain one would go: staged
// for a cold run (a staging or template point), moved into a warm or
// forked runner's namespace (bind.go).

// CheckOwnerMount makes (and drops) an idmapped clone of dir for o: what
// a run over dir will need, checked before it starts.
func (n *Backend) CheckOwnerMount(dir string, o sandbox.Owner) error {
	if n.opts.Rootless {
		return n.ownDir(o)
	}
	f, err := n.ids.Clone(dir, o, true)
	if err != nil {
		return err
	}
	return f.Close()
}

// stageWorkspace stages spec's workspace for a cold run and returns the
// path bwrap binds.
func (b *bwrapArgs) stageWorkspace(spec sandbox.Spec, ro bool) (string, error) {
	if spec.DirOwner == nil || b.n.opts.Rootless {
		if err := b.n.ownDirOf(spec); err != nil {
			return "", err
		}
		return b.stage.Bind(spec.Dir)
	}
	f, err := b.n.ids.Clone(spec.Dir, *spec.DirOwner, ro)
	if err != nil {
		return "", err
	}
	return b.stage.Attach(f)
}

// cloneWorkspace returns a detached clone of spec's workspace for a warm
// runner (a descriptor the caller closes).
func (n *Backend) cloneWorkspace(spec sandbox.Spec, ro bool) (int, error) {
	if spec.DirOwner == nil || n.opts.Rootless {
		if err := n.ownDirOf(spec); err != nil {
			return -1, err
		}
		return warm.CloneTree(spec.Dir, ro)
	}
	f, err := n.ids.Clone(spec.Dir, *spec.DirOwner, ro)
	if err != nil {
		return -1, err
	}
	defer f.Close()
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return -1, fmt.Errorf("dup %s: %w", spec.Dir, os.NewSyscallError("dup", err))
	}
	unix.CloseOnExec(fd)
	return fd, nil
}

// reachUID is whose rights the program has on spec's workspace when
// deciding which forbidden paths below it it could reach (and so must be
// masked): the owner's on an idmapped workspace, else the sandbox user's.
func (n *Backend) reachUID(spec sandbox.Spec) int {
	if spec.DirOwner != nil {
		return spec.DirOwner.UID
	}
	return n.hostUID
}
