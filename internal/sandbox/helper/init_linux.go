package helper

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// RunInit is the body of `codexec sandbox-init [--capture K SOCKETS] [--root
// PLAN] UID GID PROCS... -- BWRAP ARGS…`.
// It never returns on success; on failure it prints why and returns the exit
// status 125 (the conventional "launcher failed" status).
func RunInit(args []string) int {
	// dropPrivileges changes only the calling thread's credentials, and
	// sandbox-init execs from that same thread, which makes them the
	// process's: pin the goroutine to its thread until then.
	runtime.LockOSThread()
	server = os.Getppid()
	if err := runInit(args); err != nil {
		fmt.Fprintln(os.Stderr, "codexec sandbox-init:", err)
	}
	return 125
}

func runInit(args []string) error {
	if len(args) > 0 && args[0] == "--pooled" {
		return runPooled(args[1:])
	}
	capture := -1
	var socks Sockets
	if len(args) > 2 && args[0] == CaptureOption {
		k, err1 := strconv.Atoi(args[1])
		s, err2 := ParseSockets(args[2])
		if err := errors.Join(err1, err2); err != nil || k < 0 {
			return fmt.Errorf("bad %s %q %q: %v", CaptureOption, args[1], args[2], err)
		}
		socks = s
		capture, args = 3+k, args[3:]
	}
	plan := ""
	if len(args) > 1 && args[0] == RootOption {
		plan, args = args[1], args[2:]
	}
	sep := -1
	for i, a := range args {
		if a == "--" {
			sep = i
			break
		}
	}
	if sep < 2 || sep == len(args)-1 {
		return fmt.Errorf("usage: %s UID GID [CGROUP.PROCS…] -- COMMAND…", InitCommand)
	}
	uid, err1 := strconv.Atoi(args[0])
	gid, err2 := strconv.Atoi(args[1])
	if err1 != nil || err2 != nil || uid <= 0 || gid <= 0 {
		return fmt.Errorf("bad uid/gid %q %q (must be non-root)", args[0], args[1])
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	for _, f := range args[2:sep] {
		if err := os.WriteFile(f, pid, 0); err != nil {
			return fmt.Errorf("join cgroup: %w", err)
		}
	}
	if capture >= 0 {
		if err := captureInto(capture, socks); err != nil {
			return err
		}
	}
	if plan != "" {
		inherited := func(k int) (int, bool) { return 3 + k, k >= 0 }
		if err := enterRoot(plan, inherited); err != nil {
			return err
		}
	}
	if err := dropPrivileges(uid, gid); err != nil {
		return err
	}
	argv := args[sep+1:]
	return syscall.Exec(argv[0], argv, os.Environ())
}

// server is the parent sandbox-init started with: the server, alive then
// (the parent-death signal set at the fork would have killed it otherwise).
var server int

// dropPrivileges makes the calling thread uid/gid with no supplementary
// groups, no_new_privs and a parent-death SIGKILL, so nothing it starts is
// host root even though user namespaces map ids around. The credentials are
// changed with raw system calls, for this thread only: Go's
// syscall.Setresuid and friends apply them to every thread of the process
// by signalling each one, which showed as several per cent of all CPU in a
// profile of concurrent runs on a VM. The caller must exec from this thread
// (the other threads run only the Go runtime until then).
func dropPrivileges(uid, gid int) error {
	if err := setIDs(uid, gid); err != nil {
		return err
	}
	// A rootless server holds capabilities in its own user namespace as
	// ambient ones; bubblewrap refuses to start with any (and needs none).
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("drop ambient capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	// Changing credentials clears the parent-death signal; restore it so the
	// sandbox dies with the server, and make sure the server did not die
	// while it was cleared: the signal would never come then.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("parent-death signal: %w", err)
	}
	if unix.Getppid() != server {
		return errors.New("the server ended while the sandbox was starting")
	}
	return nil
}

// setIDs makes the calling thread uid/gid with no supplementary groups.
// A server without root (package rootless) passes its own ids: it cannot
// change them, and its sandboxes run as its user, mapped to an
// unprivileged id inside their own user namespace.
func setIDs(uid, gid int) error {
	if uid == unix.Getuid() && gid == unix.Getgid() && uid != 0 {
		return nil
	}
	for _, c := range []struct {
		name    string
		nr      uintptr
		a, b, d uintptr
	}{
		{"setgroups", unix.SYS_SETGROUPS, 0, 0, 0},
		{"setresgid", unix.SYS_SETRESGID, uintptr(gid), uintptr(gid), uintptr(gid)},
		{"setresuid", unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)},
	} {
		if _, _, errno := unix.RawSyscall(c.nr, c.a, c.b, c.d); errno != 0 {
			return fmt.Errorf("%s: %w", c.name, errno)
		}
	}
	return nil
}

// runPooled is `sandbox-init --pooled UID GID PROCS…`: join the cgroups,
// wait on fd 3 for the command (receiveLaunch, which enters the template
// namespace as root if asked), set up the network namespace if the message
// says (CaptureOption's work, answered on fd 3), drop privileges and exec it.
func runPooled(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: %s --pooled UID GID [CGROUP.PROCS…]", InitCommand)
	}
	uid, err1 := strconv.Atoi(args[0])
	gid, err2 := strconv.Atoi(args[1])
	if err1 != nil || err2 != nil || uid <= 0 || gid <= 0 {
		return fmt.Errorf("bad uid/gid %q %q (must be non-root)", args[0], args[1])
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	for _, f := range args[2:] {
		if err := rawWrite(f, pid); err != nil {
			return fmt.Errorf("join cgroup: %w", err)
		}
	}
	msg, err := receiveLaunch()
	if err != nil {
		return err
	}
	if msg.Net != nil {
		// The server started this launcher in a fresh network namespace:
		// loopback up and the run's sockets, sent back on fd 3.
		if err := captureInto(3, *msg.Net); err != nil {
			return err
		}
	}
	if err := dropPrivileges(uid, gid); err != nil {
		return err
	}
	if len(msg.Argv) == 0 {
		return fmt.Errorf("empty command")
	}
	return syscall.Exec(msg.Argv[0], msg.Argv, msg.Env)
}

// rawWrite writes data to path with plain system calls (no runtime poller).
func rawWrite(path string, data []byte) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, data)
	return err
}
