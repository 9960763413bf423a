// Package namespace is the isolated sandbox backend: bubblewrap with fresh
// namespaces, a cgroup per run, a seccomp filter and Landlock, as an
// unprivileged uid. Its files: the backend and its run path
// (namespace.go), bwrap's command line (args.go), the template mount
// namespace bwrap starts from (template.go, built by package
// mounttemplate; a run's trees are staged by package staging), pooled
// sandbox-init launchers (launcher.go), warm runners
// (runner.go) and binding a workspace into one (bind.go), python
// fork-servers (zygote.go), and the captured network (capture.go): with a
// CaptureSpec, a sandbox's network namespace is made by the server (owned
// by its user namespace, so the program cannot alter its routes, links or
// sockets) and its listening sockets are handed to the run's egress owner.
// The child side of its re-executions is package helper. All of it needs
// Linux; elsewhere (other.go) New reports the mode unavailable.
package namespace

import "github.com/codexec/codexec/internal/sandbox"

// Options configure the namespace backend. Zero values pick the
// defaults noted per field.
type Options struct {
	// Bwrap is the bubblewrap binary (default: /usr/bin/bwrap, else PATH).
	Bwrap string
	// Exe is the binary run as sandbox-init and sandbox-landlock (default:
	// HelperName next to the running executable if present — it starts much
	// faster — else the running executable itself).
	Exe string
	// UID and GID are the unprivileged host ids programs run as
	// (default 65534, "nobody"); with Rootless, the ids programs have
	// inside their sandbox, mapped to the server's user outside.
	UID, GID int
	// Rootless: the server runs without root, as a normal user, in a user
	// and mount namespace of its own (package rootless). Programs then run
	// as that user on the host; workspaces are not handed over; a
	// directory with another account's rights (Spec.DirOwner) is refused;
	// without a usable cgroup, limits are per-process resource limits.
	Rootless bool
	// OwnedRoot is the directory holding workspaces codexec created itself;
	// workspaces below it are chowned to UID. Other workspaces (a caller's
	// working_dir) are never changed: they are mounted read-only unless
	// Spec.DirWritable (see sandbox.WorkspaceReadOnly).
	OwnedRoot string
	// Mask lists host paths hidden (empty tmpfs or /dev/null) when they lie
	// strictly below a workspace: ~/.ssh, the data directory, ….
	Mask []string
	// NoLandlock skips the in-sandbox Landlock step (helper.LandlockCommand).
	NoLandlock bool
	// ReadOnly lists extra host directories visible read-only at the same
	// path (e.g. the prefix of an interpreter installed outside /usr).
	ReadOnly []string
	// Prewarm lists runs to start warm runners for at once, beside the
	// start-up probe (see Prewarm); a failed probe stops them.
	Prewarm []sandbox.Spec
	// Pool configures warm runners (see package warm); Size 0 disables them.
	Pool sandbox.PoolOptions
	// CaptureSpec, when enabled, gives every sandbox a network namespace
	// of the server's with its listening sockets (capture.go), and its
	// Files bound read-only over their targets; runs with Spec.Egress get
	// the sockets served. Nil or disabled: no network but loopback, at no
	// cost, as without it.
	CaptureSpec *sandbox.CaptureSpec
	// CgroupParent is the cgroup path below which runs' groups are made
	// (see cgroup.DetectIn): a subtree delegated to the server's user.
	// Empty: the default for root, or the user's systemd-delegated subtree.
	CgroupParent string
}
