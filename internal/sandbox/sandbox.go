// Package sandbox is the contract every sandbox backend keeps: callers
// describe what to run with a Spec (argv, workspace, environment, mounts,
// Limits) and a Backend starts it confined as its mode says; backends
// that keep warm runners are also Pooled. Every backend guarantees the
// same contract for a Process: stdout/stderr go to the given writers,
// Terminate and Kill act on every process the program started (not only
// the main one), and after Release nothing the program started is still
// running. It also holds the workspace rules backends share (grants and
// masks, workspace.go).
//
// The backends are subpackages: namespace (bubblewrap + cgroups + seccomp
// + Landlock), container (a docker-compatible CLI) and subprocess (light
// isolation); warm is their runner pool, helper the child side of their
// re-executions; host processes are package proc.
package sandbox

import (
	"context"
	"io"
	"time"

	"github.com/codexec/codexec/internal/confine"
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

// ProgramPath is where a Spec's ProgramDir is visible to the sandboxed
// program. Backends without a mount namespace rewrite arguments that start
// with it to the host path (see Spec.ProgramDir).
const ProgramPath = "/opt/codexec/program"

// HelperName is the small helper binary (cmd/codexec-sandbox) that runs the
// sandbox-init, sandbox-landlock and sandbox-fsize steps when installed
// next to codexec (see package helper).
const HelperName = helper.Name

// WorkspacePath is where isolated backends mount Spec.Dir. Subprocess mode runs
// in Spec.Dir itself. Programs should use relative paths or $HOME.
const WorkspacePath = "/workspace"

// Limits are the resource limits of one run or session. Zero means "no limit
// from codexec" for that resource. Subprocess mode enforces only DiskBytes,
// as the maximum size of one file (RLIMIT_FSIZE).
type Limits struct {
	MemoryBytes int64
	CPUs        float64
	Pids        int
	// DiskBytes caps the private /tmp tmpfs of isolated modes when the spec
	// has no TmpDir, and the size of any one file in subprocess mode.
	DiskBytes int64
}

// Mount exposes a host directory inside the sandbox. Subprocess mode ignores
// Target (the program sees Host directly).
type Mount struct {
	Host     string
	Target   string
	ReadOnly bool
}

// Spec describes one program to start. Argv[0] must be an absolute path
// valid on the host (backends with their own root map it as needed).
type Spec struct {
	// ID names the run (exec_… or sess_…); backends use it for cgroup and
	// container names.
	ID   string
	Argv []string
	// Dir is the host workspace: the program's working directory and $HOME.
	// In isolated modes it is the only host directory that can be writable:
	// codexec's own workspaces (below the backend's owned root) are; a
	// caller's directory is read-only unless DirWritable.
	Dir string
	// DirWritable makes a caller's Dir writable in isolated modes, with the
	// rights its own owner, mode and ACLs give the sandbox user, or its
	// owner with DirOwner (the operator's writable roots; the server never
	// changes them).
	DirWritable bool
	// DirOwner, if set, gives the program the rights of the owner of a
	// caller's Dir on Dir's mount only (an idmapped mount, package idmap):
	// the owner's files are its own there, and what it creates lands on the
	// host owned by the owner. The engine sets it only for directories the
	// caller is entitled to, and only for backends that check it can be
	// honoured (OwnerMounter).
	DirOwner *Owner
	// ProgramDir, if set, is a host directory exposed read-only at
	// ProgramPath; arguments beginning with ProgramPath refer to it.
	ProgramDir string
	// Env is the complete environment ("K=V"); nothing is inherited.
	// Backends may rewrite HOME to where Dir is visible.
	Env    []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Mounts are extra host directories (e.g. installed packages).
	Mounts []Mount
	// TmpDir, if set, is a host directory isolated backends expose writable
	// as /tmp instead of a tmpfs of Limits.DiskBytes: a bounded disk shared
	// with the workspace (internal/diskbound). Subprocess mode and warm
	// runners (Warm) ignore it: a warm run keeps the runner's tmpfs /tmp.
	TmpDir string
	Limits Limits
	// Network, when true, keeps host networking (only for trusted tools such
	// as the shell command tools in subprocess mode). Isolated modes refuse it.
	Network bool
	// Egress, if set, is the run's network through the egress owner: the
	// backend hands the sandbox's Capture to it (Egress.Serve). Backends
	// made without a CaptureSpec, and subprocess mode, ignore it. Without
	// it, a sandbox's captured sockets are closed before the program runs.
	Egress Egress
	// Warm (WarmPython, WarmNode, WarmBash) lets a backend serve the run
	// from a warm runner started ahead of time: Argv must then be the
	// interpreter, its flags, -c (python, bash) or -e (node), the code and
	// its arguments. Backends without runners (of that kind), or without
	// one ready, start the program as usual; either way the run's isolation
	// and observable behaviour are the same.
	Warm string
	// Deadline, if positive, is the longest the run may live. The caller
	// enforces its own timeout well before; backends whose runs could
	// outlive a killed server (docker mode: the engine keeps containers)
	// enforce Deadline inside the sandbox too, so that a run never outlives
	// it. Zero: no such bound (sessions).
	Deadline time.Duration
	// Background asks for a low CPU weight (start-up checks), where the
	// backend has a cgroup to weigh; others ignore it.
	Background bool
}

// Owner is whose rights a mount of a caller's directory gives the program:
// the host uid and gid of the directory's owner (Spec.DirOwner).
type Owner struct{ UID, GID int }

// OwnerMounter is implemented by isolated backends that can honour
// Spec.DirOwner.
type OwnerMounter interface {
	// CheckOwnerMount says whether dir can be mounted with o's rights
	// here, and if not, why (the kernel, the file system or the engine).
	CheckOwnerMount(dir string, o Owner) error
}

// Exit describes how a program ended: exit code or signal, OOM kill, peak
// memory (see proc.Exit).
type Exit = proc.Exit

// Process is a started program. Methods are safe for concurrent use.
type Process interface {
	// Pid is the host pid of the backend's top process (bwrap, the CLI, or
	// the program itself in subprocess mode).
	Pid() int
	// Wait blocks until the main program exits and returns how.
	Wait() (Exit, error)
	// Terminate asks every process of the run to stop (SIGTERM).
	Terminate() error
	// Kill forcibly stops every process of the run (SIGKILL), including
	// background and daemonised children.
	Kill() error
	// Release kills anything left, waits until output pipes are drained (at
	// most drainTimeout), and frees backend resources (cgroups, containers,
	// temp dirs). Call it exactly once, after Wait.
	Release(drainTimeout time.Duration) error
}

// PathOf is how p's sandbox was obtained — proc.PathWarm (a ready runner),
// proc.PathForked (forked on the spot), proc.PathCold — as soon as Start
// has returned it, or "" when its backend does not say. Exit.Usage.Path
// says the same once the run has ended.
func PathOf(p Process) string {
	if r, ok := p.(interface{ Path() string }); ok {
		return r.Path()
	}
	return ""
}

// Read reads p's counters while it runs (proc.Reading), restarting its
// peak memory when resetPeak is set; false when its backend cannot (no
// cgroup: subprocess and docker modes, rootless without delegation).
func Read(p Process, resetPeak bool) (proc.Reading, bool) {
	if r, ok := p.(interface {
		Read(bool) (proc.Reading, bool)
	}); ok {
		return r.Read(resetPeak)
	}
	return proc.Reading{}, false
}

// Backend starts programs under one isolation mode. Implementations are safe
// for concurrent use.
type Backend interface {
	// Name is the mode name reported in results and logs ("subprocess", …).
	Name() string
	// Start starts spec. The context bounds only the start itself; use the
	// Process methods to stop a running program.
	Start(ctx context.Context, spec Spec) (Process, error)
	// Isolated reports whether programs are confined (no host filesystem,
	// no network, resource limits). Subprocess mode returns false.
	Isolated() bool
	// User is the identity programs' file access has on the host; the
	// server acts on their files (artifacts, uploads, downloads) with
	// exactly it. Subprocess mode's is the server's own.
	User() confine.Identity
}
