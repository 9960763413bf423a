// Package container is the docker-compatible sandbox backend: each run in
// its own container through a docker or podman CLI (container.go), warm
// containers for python and node runs (warm_linux.go, warm_node_linux.go),
// the network capture for egress (capture_linux.go, gate_linux.go), and
// the bounds on what a killed server leaves behind (life.go). Cold runs
// work on any system whose CLI reaches an engine; the features that enter
// a container's namespaces from the server are Linux only (platform.go).
package container

import (
	"errors"
	"fmt"
	"os"

	"github.com/codexec/codexec/internal/sandbox"
)

// Options configure the container backend.
type Options struct {
	// CLI is a docker-compatible command (docker, podman); default docker.
	CLI string
	// Image is the sandbox image (see Dockerfile.sandbox).
	Image string
	// Network is the container network mode; default none.
	Network string
	// UID is the uid programs run as inside the container (default 65534).
	UID int
	// OwnedRoot holds the workspaces codexec created itself (chowned to
	// UID); any other workspace is a caller's directory, never changed and
	// mounted read-only unless sandbox.Spec.DirWritable (see sandbox.WorkspaceReadOnly).
	OwnedRoot string
	// Mask lists host paths hidden (empty tmpfs or /dev/null) when they lie
	// strictly below a workspace: ~/.ssh, the data directory, ….
	Mask []string
	// CaptureSpec, when enabled, gives every container the sockets of a
	// run's network through the egress owner (capture_linux.go): the container
	// still has no network (Network must be none), and the server makes
	// the sockets in its namespace before the program starts, then hands
	// them to the run's sandbox.Spec.Egress (or closes them). It needs the
	// server to be root beside a rootful engine. Nil or not enabled: no
	// sockets, as without egress.
	CaptureSpec *sandbox.CaptureSpec
	// Pool configures warm containers for python and node runs
	// (warm_linux.go); a zero Size disables them. Off Linux New ignores
	// Pool and CaptureSpec (platform.go).
	Pool sandbox.PoolOptions
}

// checkCapture refuses options whose CaptureSpec cannot be honoured: a
// container network other than none (the program would reach it beside
// the capture), a server that is not root (it cannot enter a container's
// network namespace), or ports that collide or are out of range.
func checkCapture(o Options) error {
	cs := o.CaptureSpec
	if !cs.Enabled() {
		return nil
	}
	if o.Network != "none" {
		return fmt.Errorf("egress needs the container network none, not %q: unset CODEXEC_DOCKER_NETWORK (runs reach the network through the egress proxy)", o.Network)
	}
	if os.Geteuid() != 0 {
		return errors.New("egress in docker mode needs the server to run as root beside a rootful engine (it makes the proxy's sockets inside each container's network namespace); run the server as root or leave CODEXEC_EGRESS_ALLOW empty")
	}
	seen := map[int]string{}
	claim := func(port int, what string) error {
		if port < 1 || port > 65535 {
			return fmt.Errorf("egress capture: %s port %d is out of range (1-65535)", what, port)
		}
		if prev, dup := seen[port]; dup {
			return fmt.Errorf("egress capture: port %d is asked for twice (%s and %s)", port, prev, what)
		}
		seen[port] = what
		return nil
	}
	if cs.ProxyPort > 0 {
		if err := claim(cs.ProxyPort, "proxy"); err != nil {
			return err
		}
	}
	if cs.DNS {
		if err := claim(53, "DNS"); err != nil {
			return err
		}
	}
	for _, p := range cs.Ports {
		if err := claim(p, "captured"); err != nil {
			return err
		}
	}
	return nil
}
