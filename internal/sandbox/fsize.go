package sandbox

import (
	"log/slog"

	"golang.org/x/sys/unix"
)

// limitFileSize caps, for subprocess mode, the size of any single file the
// process pid — and everything it starts afterwards — can write
// (RLIMIT_FSIZE): a write past it fails with EFBIG, or SIGXFSZ kills a
// program that does not ignore it (Python ignores it). It bounds neither
// the number of files nor their total. Go cannot set a child's rlimits
// between fork and exec, so it is applied right after the start, while the
// interpreter is still loading and before the user's code runs.
func limitFileSize(pid int, bytes int64) {
	if bytes <= 0 {
		return
	}
	lim := unix.Rlimit{Cur: uint64(bytes), Max: uint64(bytes)}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &lim, nil); err != nil {
		slog.Warn("subprocess: could not set the file size limit", "pid", pid, "err", err)
	}
}
