//go:build linux

package namespace

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/cgroup"
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

// Without root (Options.Rootless) the backend works as with it, in the
// server's own user namespace, except where host rights are needed:
//   - cgroups only where one is delegated to the user; otherwise none (nil
//     groups): limits are the Landlock step's resource limits, a run's
//     processes are found as bwrap's descendants and killed with its pid
//     namespace (bwrap dies, so does the namespace's init, so does
//     everything in it); a forked child is known by the pid the kernel
//     names as the sender of its "R" (SO_PASSCRED);
//   - a caller's directory gets the user's rights, its own: one owned by
//     another account is refused.

// newGroup makes a run's cgroup with l, or none (nil, no error) where the
// backend has no cgroups.
func (n *Backend) newGroup(name string, l sandbox.Limits) (*cgroup.Group, error) {
	if n.noCgroup {
		return nil, nil
	}
	return cgroup.New(n.cg, name, cgroup.Limits{MemoryBytes: l.MemoryBytes, CPUs: l.CPUs, Pids: l.Pids})
}

// rlimits is the Landlock step's RlimitsOption value for l: memory per
// process, processes in the sandbox, and the largest file (the disk
// limit).
func rlimits(l sandbox.Limits) string {
	return helper.Rlimits(l.MemoryBytes, int64(l.Pids), l.DiskBytes)
}

// signalRun sends sig to a run's processes but bwrap (pid leader): those of
// its cgroup, or without one bwrap's descendants (a pid namespace's
// orphans are its init's children, so they are among them).
func signalRun(cg *cgroup.Group, leader int, sig syscall.Signal) {
	if cg != nil {
		cg.Signal(sig, leader)
		return
	}
	for _, pid := range descendants(leader) {
		_ = syscall.Kill(pid, sig)
	}
}

// descendants lists the processes below pid (not pid itself), from each
// thread's children file; none if pid is 0 or gone.
func descendants(pid int) []int {
	if pid <= 0 {
		return nil
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 && len(out) < 1<<16 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(p) + "/task")
		for _, t := range tasks {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + t.Name() + "/children")
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out, queue = append(out, c), append(queue, c)
				}
			}
		}
	}
	return out
}

// ownDirOf checks spec's caller directory for a rootless backend: with an
// owner's rights asked (Spec.DirOwner), that owner must be the user
// codexec runs as (ownDir).
func (n *Backend) ownDirOf(spec sandbox.Spec) error {
	if spec.DirOwner == nil || !n.opts.Rootless {
		return nil
	}
	return n.ownDir(*spec.DirOwner)
}

// ownDir refuses an owner other than the user a rootless server runs as:
// without root, programs can have no other account's rights.
func (n *Backend) ownDir(o sandbox.Owner) error {
	if o.UID == n.hostUID {
		return nil
	}
	return fmt.Errorf("codexec runs without root as uid %d, so code can use a directory only with that user's rights; "+
		"this one belongs to uid %d (run codexec as root, or use a directory of uid %d)", n.hostUID, o.UID, n.hostUID)
}

// passCredentials makes messages to conn carry their sender's credentials
// (pid, in this process's pid namespace; see helper.ReceiveSocketsFrom).
func passCredentials(conn *os.File) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil {
		return err
	}
	return serr
}

// killPid kills a forked child known only by pid (cg nil), which ends its
// pid namespace with it.
func killPid(cg *cgroup.Group, pid int) {
	if cg == nil && pid > 0 {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

// kill ends every process of the runner: through its cgroup, or without
// one through its pid namespace, whose init dies (a forked runner's
// program; bwrap's, which dies with bwrap).
func (r *nsRunner) kill() {
	if r.cg != nil {
		_ = r.cg.Kill()
		return
	}
	r.lead.Kill()
	if r.Cmd != nil && r.Cmd.Process != nil {
		_ = r.Cmd.Process.Kill()
	}
}

// childRlimits is a zygote child's resource limits argument: the run's,
// where no cgroup holds it; "" otherwise.
func (n *Backend) childRlimits(spec sandbox.Spec) string {
	if !n.noCgroup {
		return ""
	}
	return rlimits(spec.Limits)
}

// forkedSignal is a forked run's signal hook without a cgroup: SIGKILL to
// its program, pid 1 of its pid namespace (which ends the namespace),
// other signals to it and every process below it; then base.
func forkedSignal(lead *proc.NamespaceInit, base func(syscall.Signal) error) func(syscall.Signal) error {
	return func(sig syscall.Signal) error {
		if sig == syscall.SIGKILL {
			lead.Kill()
		} else if pid := lead.Pid(); pid > 0 {
			_ = syscall.Kill(pid, sig)
			for _, p := range descendants(pid) {
				_ = syscall.Kill(p, sig)
			}
		}
		return base(sig)
	}
}
