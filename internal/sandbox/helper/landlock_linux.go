package helper

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RunLandlock is the body of the sandbox-landlock sub-command. It returns
// only on failure (exit status 126; with --runner, see serveRun). Every
// descriptor above stdio (above 3 with --keep-ctl or --runner) is closed
// on exec: whatever the server inherited from its own parent must not
// reach sandboxed code, where it could serve as a channel between runs.
func RunLandlock(args []string) int {
	// Landlock restricts only the calling thread; RunLandlock execs from the
	// same thread, so pin the goroutine to it.
	runtime.LockOSThread()
	first, runner := uint(3), false
	if len(args) > 1 && args[0] == RlimitsOption {
		if err := setRlimits(args[1]); err != nil {
			fmt.Fprintln(os.Stderr, "codexec sandbox-landlock:", err)
			return 126
		}
		args = args[2:]
	}
	if len(args) > 0 && (args[0] == KeepCtl || args[0] == RunnerOption) {
		first, runner, args = 4, args[0] == RunnerOption, args[1:]
	}
	_ = unix.CloseRange(first, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	sep := -1
	for i, a := range args {
		if a == "--" {
			sep = i
			break
		}
	}
	if sep < 0 || sep == len(args)-1 {
		fmt.Fprintln(os.Stderr, "usage: codexec sandbox-landlock RW_DIR… -- PROGRAM ARGS…")
		return 126
	}
	if err := landlockRestrict(args[:sep]); err != nil {
		fmt.Fprintln(os.Stderr, "codexec sandbox-landlock:", err)
		return 126
	}
	argv := args[sep+1:]
	if runner {
		return serveRun(argv, true)
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PWD=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(argv[0], argv, env)
	fmt.Fprintf(os.Stderr, "exec %s: %v\n", argv[0], err)
	return 127
}

// fsRights returns the file-system rights Landlock ABI abi knows.
func fsRights(abi int) uint64 {
	r := uint64(1<<13 - 1) // ABI 1: EXECUTE … MAKE_SYM
	if abi >= 2 {
		r |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		r |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return r
}

// LandlockABI returns the kernel's Landlock ABI version (0: none).
func LandlockABI() int {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(abi)
}

func landlockRestrict(rw []string) error {
	abi := LandlockABI()
	if abi < 1 {
		return nil // no Landlock: best effort
	}
	all := fsRights(abi)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: all}
	size := unsafe.Sizeof(attr)
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	} else {
		size = unsafe.Offsetof(attr.Scoped)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	read := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR)
	rules := map[string]uint64{"/": read, "/dev": read | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | (all & unix.LANDLOCK_ACCESS_FS_IOCTL_DEV)}
	for _, d := range rw {
		rules[d] = all
	}
	for path, access := range rules {
		if err := landlockAllow(int(fd), path, access); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

func landlockAllow(ruleset int, path string, access uint64) error {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock rule %s: %w", path, err)
	}
	defer unix.Close(pfd)
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(pfd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("landlock rule %s: %w", path, errno)
	}
	return nil
}
