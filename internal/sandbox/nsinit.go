package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// InitCommand is the hidden sub-command under which the codexec binary
// re-executes itself between fork and bwrap (runc style): it places itself in
// the run's cgroups while still root, drops to the sandbox uid for good, sets
// no_new_privs and then executes bwrap. main must dispatch it before anything
// else (see RunInit).
const InitCommand = "sandbox-init"

// RunInit is the body of `codexec sandbox-init UID GID PROCS... -- BWRAP ARGS…`.
// It never returns on success; on failure it prints why and returns the exit
// status 125 (the conventional "launcher failed" status).
func RunInit(args []string) int {
	if err := runInit(args); err != nil {
		fmt.Fprintln(os.Stderr, "codexec sandbox-init:", err)
	}
	return 125
}

func runInit(args []string) error {
	if len(args) > 0 && args[0] == "--pooled" {
		return runPooled(args[1:])
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
	if err := dropPrivileges(uid, gid); err != nil {
		return err
	}
	argv := args[sep+1:]
	return syscall.Exec(argv[0], argv, os.Environ())
}

// dropPrivileges makes the process a plain unprivileged user on the host
// (real, effective and saved ids; no supplementary groups), so nothing it
// starts is host root even though user namespaces map ids around (trap 2).
func dropPrivileges(uid, gid int) error {
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		return fmt.Errorf("setresgid: %w", err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("setresuid: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	// Changing credentials clears the parent-death signal; restore it so the
	// sandbox dies with the server.
	return unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0)
}

// runPooled is `sandbox-init --pooled UID GID PROCS…`: join the cgroups, drop
// privileges, then wait on fd 3 for the command (see pool.go) and exec it.
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
	if err := dropPrivileges(uid, gid); err != nil {
		return err
	}
	argv, env, err := receiveLaunch()
	if err != nil {
		return err
	}
	if len(argv) == 0 {
		return fmt.Errorf("empty command")
	}
	return syscall.Exec(argv[0], argv, env)
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
