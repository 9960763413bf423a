package subprocess

import (
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
// runners, see fsize.go). A failure is logged, not returned: the runner
// still serves runs, as it did before it had a cap.
func limitFileSize(pid int, bytes int64) error {
	if bytes <= 0 {
		return nil
	}
	lim := unix.Rlimit{Cur: uint64(bytes), Max: uint64(bytes)}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &lim, nil); err != nil {
		slog.Warn("subprocess: could not set the file size limit", "pid", pid, "err", err)
	}
	return nil
}
