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

// workspaceStage is a staged idmapped clone of a caller's directory
// (workspaceSource).
type workspaceStage = staging.Stage

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
