package subprocess

import (
	"fmt"
	"log/slog"
	"syscall"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes the server a child subreaper, so that orphaned
// descendants of runs are re-parented to it (and found by the sweep).
func becomeSubreaper() {
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// groupAttr starts a child in its own process group, killed if the server
// dies.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// limitFileSize caps the file size of the running process pid (warm
// runners, see fsize.go). A runner whose cap could not be set must not
// serve runs (results report the cap, Enforced): the error destroys it,
// and runs start cold, capped through the helper.
func limitFileSize(pid int, bytes int64) error {
	if bytes <= 0 {
		return nil
	}
	lim := unix.Rlimit{Cur: uint64(bytes), Max: uint64(bytes)}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &lim, nil); err != nil {
		slog.Warn("subprocess: could not set a warm runner's file size limit; runs start cold", "pid", pid, "err", err)
		return fmt.Errorf("subprocess: cap the file size of warm runner %d: %w", pid, err)
	}
	return nil
}
