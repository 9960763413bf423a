// Package container is the docker-compatible sandbox backend: each run in
// its own container through a docker or podman CLI (container.go), warm
// containers for python and node runs (warm.go, warm_node.go), and the
// bounds on what a killed server leaves behind (life.go). It is built for
// Linux (warm containers enter the container's mount namespace); elsewhere
// (other.go) New reports the mode unavailable.
package container

import "github.com/codexec/codexec/internal/sandbox"

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
	// run's network through the egress owner (capture.go): the container
	// still has no network (Network must be none), and the server makes
	// the sockets in its namespace before the program starts, then hands
	// them to the run's sandbox.Spec.Egress (or closes them). It needs the
	// server to be root beside a rootful engine. Nil or not enabled: no
	// sockets, as without egress.
	CaptureSpec *sandbox.CaptureSpec
	// Pool configures warm containers for python runs (warm.go);
	// a zero Size disables them.
	Pool sandbox.PoolOptions
}
