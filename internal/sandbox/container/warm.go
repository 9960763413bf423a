package container

import (
	"os"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/warm"
)

// Which runs a warm container serves, and the backend's lifetime around
// its pool. The container runners themselves are Linux only
// (warm_linux.go); elsewhere New starts no pool and every run is cold.

// warmRequest returns the warm request serving spec, if a container runner
// can: python `-c` and node `-e` programs. As in namespace mode (warm.Parse), a warm run
// keeps the runner's own size-limited tmpfs /tmp instead of spec.TmpDir.
//
// bash runs start cold: an exec runner's stub is the helper binary, which
// the image does not have, and a program that replaced its stub reports
// no status, so its run would end only with the CLI, after the container's
// removal — most of what a warm container saves.
func (c *Backend) warmRequest(spec sandbox.Spec) (warm.Request, bool) {
	req, ok := warm.Parse(spec)
	// A caller's directory is seen at its own path, which a warm
	// container (its workspace at /workspace) cannot give: it runs cold.
	if !ok || c.runners.Pool == nil || req.Exec || sandbox.CallerWorkspace(spec, c.opts.OwnedRoot) {
		return warm.Request{}, false
	}
	return req, true
}

// Prewarm starts a warm container for runs like spec ahead of the first
// such run. Specs that cannot run warm are ignored.
func (c *Backend) Prewarm(spec sandbox.Spec) {
	if req, ok := c.warmRequest(spec); ok {
		c.runners.Pool.Demand(req)
	}
}

// Close stops the warm containers. The backend must not be used afterwards.
func (c *Backend) Close() error {
	c.runners.Close()
	c.closeOwners()
	if c.warmRoot != "" {
		return os.RemoveAll(c.warmRoot)
	}
	return nil
}
