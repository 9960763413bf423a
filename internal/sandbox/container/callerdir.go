package container

import "github.com/codexec/codexec/internal/sandbox"

// A caller's directory (working_dir, cwd) is mounted at its own path in the
// container, as in namespace mode, so the code's working directory is the
// one the caller named; codexec's own fresh workspaces stay at
// /workspace. With Spec.DirOwner the directory is an idmapped clone (the
// owner's rights, package idmap) the server attaches on a point of its
// private staging directory, and the container binds that point: a bind
// of an idmapped mount keeps its id mapping. That needs the engine on this
// host and the server as root, on Linux (owners_linux.go); otherwise
// CheckOwnerMount says why.

// target is where the container sees spec's workspace.
func (c *Backend) target(spec sandbox.Spec) string {
	if sandbox.CallerWorkspace(spec, c.opts.OwnedRoot) {
		return spec.Dir
	}
	return sandbox.WorkspacePath
}

// mappedDir is the host directory whose paths in a program's arguments
// are rewritten to /workspace: codexec's own workspace only.
func (c *Backend) mappedDir(spec sandbox.Spec) string {
	if sandbox.CallerWorkspace(spec, c.opts.OwnedRoot) {
		return ""
	}
	return spec.Dir
}

// reachUID is whose rights decide which masked paths below the workspace
// the program could reach (see sandbox.MasksBelow).
func (c *Backend) reachUID(spec sandbox.Spec) int {
	if spec.DirOwner != nil {
		return spec.DirOwner.UID
	}
	return c.opts.UID
}
