package container

import (
	"errors"
	"runtime"
	"strings"

	"github.com/codexec/codexec/internal/sandbox"
)

// What docker mode can do depends on the host system. A cold run (`run`
// per run with the workspace bound in, the limits, the deadline, a kill
// through the CLI) needs only a CLI whose engine answers: Docker Desktop,
// podman machine or colima off Linux. Three features reach into a
// container from the server's side and need its containers to be
// processes of the server's own Linux kernel:
//
//   - warm containers: the server learns the runner's pid from its socket
//     (SO_PEERCRED), enters the ready container's mount namespace and moves
//     the run's workspace in (setns, move_mount);
//   - network through the egress proxy: the server makes the proxy's
//     sockets inside the container's network namespace (setns);
//   - a caller's directory mounted with its owner's rights (idmapped
//     mounts).
//
// On other systems New starts no warm containers and makes no network
// capture (logging why), and a run that asks for network or for its
// owner's rights gets an error saying why.

// linuxOnly is a docker mode feature that needs a Linux host, and what
// runs get without it.
type linuxOnly struct{ feature, without string }

var linuxOnlyFeatures = []linuxOnly{
	{"warm containers", "runs start cold"},
	{"network through the egress proxy", "runs have no network"},
	{"mounting a caller's directory with its owner's rights", "such runs are refused"},
}

// unsupportedOn lists the docker mode features the system goos lacks,
// each with what runs get instead; none on Linux.
func unsupportedOn(goos string) []string {
	if goos == "linux" {
		return nil
	}
	out := make([]string, 0, len(linuxOnlyFeatures))
	for _, f := range linuxOnlyFeatures {
		out = append(out, f.feature+": Linux only, "+f.without)
	}
	return out
}

// Unsupported says which docker mode features this host's system lacks
// and what runs get instead; "" on Linux, where all of them work.
func Unsupported() string { return strings.Join(unsupportedOn(runtime.GOOS), "; ") }

// needsLinux is the reason given off Linux for a Linux-only feature.
const needsLinux = "docker mode reaches into a container's namespaces from the server only on a Linux host, " +
	"where containers are processes of the server's own kernel"

// adaptTo returns o as the backend honours it on the system goos, and
// notes saying what it dropped and why: off Linux, warm containers
// (Pool) and the network capture (CaptureSpec). On Linux o is unchanged.
func adaptTo(goos string, o Options) (Options, []string) {
	if goos == "linux" {
		return o, nil
	}
	var notes []string
	if o.Pool.Size > 0 {
		o.Pool.Size = 0
		notes = append(notes, "docker mode starts no warm containers on "+goos+" (runs start cold): "+needsLinux)
	}
	if o.CaptureSpec.Enabled() {
		o.CaptureSpec = nil
		notes = append(notes, "docker mode gives runs no network on "+goos+" (a run asking for network is refused): "+needsLinux)
	}
	return o, notes
}

// refusal is why spec cannot run on the system goos, nil if it can: off
// Linux, a run asking for network through the egress proxy
// (spec.Egress) or for its directory with its owner's rights
// (spec.DirOwner).
func refusal(goos string, spec sandbox.Spec) error {
	switch {
	case goos == "linux":
		return nil
	case spec.Egress != nil:
		return errors.New("sandbox: this run asks for network, which docker mode cannot give on " + goos + ": " + needsLinux +
			"; run it without network, or run codexec on Linux")
	case spec.DirOwner != nil:
		return errOwnerNeedsLinux(goos, spec.Dir)
	}
	return nil
}

// errOwnerNeedsLinux is why dir cannot be mounted with its owner's rights
// on the system goos.
func errOwnerNeedsLinux(goos, dir string) error {
	return errors.New("sandbox: " + dir + " cannot be mounted with its owner's rights on " + goos +
		": idmapped mounts need a Linux host; give the directory to the sandbox user instead, or run codexec on Linux")
}

// handsOver reports whether the server, as the user euid on the system
// goos, gives its own workspaces to the container user (chown) before a
// run. On Linux it always does: the container's processes are the host
// kernel's and its bind mounts keep the host's owners. Elsewhere the
// engine runs its containers in a virtual machine whose file sharing
// (Docker Desktop, podman machine, colima) serves a container's file
// access as the host user who started the engine, and the server, rarely
// root there, could not change the owner anyway: it hands over only as
// root.
func handsOver(goos string, euid int) bool {
	return goos == "linux" || euid == 0
}
