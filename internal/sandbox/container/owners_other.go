//go:build !linux

package container

import (
	"runtime"

	"github.com/codexec/codexec/internal/sandbox"
)

// owners is empty off Linux: a caller's directory is never mounted with
// its owner's rights here (idmapped mounts are Linux only).
type owners struct{}

// workspaceStage stands for the staged clone Linux makes for an owner
// mount; there is none here.
type workspaceStage struct{}

// Release does nothing: nothing was staged.
func (*workspaceStage) Release() error { return nil }

// closeOwners has nothing to release.
func (c *Backend) closeOwners() {}

// CheckOwnerMount reports that owner mounts need Linux.
func (c *Backend) CheckOwnerMount(dir string, _ sandbox.Owner) error {
	return errOwnerNeedsLinux(runtime.GOOS, dir)
}

// workspaceSource is spec's directory; a run asking for its owner's
// rights (spec.DirOwner) is refused, as Start already does (refusal).
func (c *Backend) workspaceSource(spec sandbox.Spec, _ string) (string, *workspaceStage, error) {
	if spec.DirOwner != nil {
		return "", nil, errOwnerNeedsLinux(runtime.GOOS, spec.Dir)
	}
	return spec.Dir, nil, nil
}
