//go:build linux

package container

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/helper"
	"github.com/codexec/codexec/internal/sandbox/idmap"
	"github.com/codexec/codexec/internal/sandbox/staging"
)

// A caller's directory (working_dir, cwd) is mounted at its own path in the
// container, as in namespace mode, so the code's working directory is the
// one the caller named; codexec's own fresh workspaces stay at
// /workspace. With Spec.DirOwner the directory is an idmapped clone (the
// owner's rights, package idmap) the server attaches on a point of its
// private staging directory, and the container binds that point: a bind
// of an idmapped mount keeps its id mapping. That needs the engine on this
// host and the server as root; otherwise CheckOwnerMount says why.

// owners is the backend's idmapped-mount state, set up on first use
// (ready): most servers never mount a caller's directory.
type owners struct {
	once sync.Once
	ids  *idmap.Mapper
	// why, if set, is why owner mounts are not possible here.
	why string
}

// ready sets up owner mounts once and reports whether they are possible.
func (c *Backend) ready() bool {
	c.owners.once.Do(c.enableOwners)
	return c.owners.ids != nil
}

// enableOwners prepares owner mounts: a staging directory and a Mapper.
func (c *Backend) enableOwners() {
	switch {
	case os.Geteuid() != 0:
		c.owners.why = "codexec is not running as root"
	case remoteEngine() != "":
		c.owners.why = "the container engine is not on this host (" + remoteEngine() + ")"
	}
	if c.owners.why != "" {
		return
	}
	exe, err := helper.Exe()
	if err == nil {
		err = staging.Acquire()
	}
	if err != nil {
		c.owners.why = err.Error()
		return
	}
	c.owners.ids = idmap.New(exe, c.opts.UID, c.opts.UID)
}

// closeOwners releases what enableOwners took.
func (c *Backend) closeOwners() {
	c.owners.once.Do(func() {}) // no set-up after Close
	if c.owners.ids != nil {
		c.owners.ids.Close()
		staging.Release()
	}
}

// remoteEngine is the address of a container engine on another host the
// CLI is pointed at, or "".
func remoteEngine() string {
	for _, k := range []string{"DOCKER_HOST", "CONTAINER_HOST"} {
		if v := os.Getenv(k); v != "" && !strings.HasPrefix(v, "unix://") {
			return k + "=" + v
		}
	}
	return ""
}

// CheckOwnerMount makes (and drops) an idmapped clone of dir for o.
func (c *Backend) CheckOwnerMount(dir string, o sandbox.Owner) error {
	if !c.ready() {
		return errors.New(c.owners.why)
	}
	f, err := c.owners.ids.Clone(dir, o, true)
	if err != nil {
		return err
	}
	return f.Close()
}

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

// workspaceSource is the host path the container binds as spec's
// workspace: its directory, or with spec.DirOwner the staged idmapped
// clone of it (st, released when the container is gone; nil otherwise).
func (c *Backend) workspaceSource(spec sandbox.Spec, name string) (string, *staging.Stage, error) {
	if spec.DirOwner == nil {
		return spec.Dir, nil, nil
	}
	if !c.ready() {
		return "", nil, fmt.Errorf("sandbox: %s cannot be mounted with its owner's rights: %s", spec.Dir, c.owners.why)
	}
	f, err := c.owners.ids.Clone(spec.Dir, *spec.DirOwner, sandbox.WorkspaceReadOnly(spec, c.opts.OwnedRoot))
	if err != nil {
		return "", nil, err
	}
	st, err := staging.New(name, false)
	if err != nil {
		_ = f.Close()
		return "", nil, err
	}
	p, err := st.Attach(f)
	if err != nil {
		_ = st.Release()
		return "", nil, err
	}
	return p, st, nil
}
