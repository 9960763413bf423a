package proc

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// CloseOnExecInherited marks every descriptor above stderr close-on-exec, so
// that descriptors the server inherited from whoever started it (a shell's
// or a supervisor's, opened without O_CLOEXEC) never reach the programs it
// starts. Go opens its own descriptors close-on-exec and passes a child only
// the ones it names, so after this a child gets exactly its stdio and
// ExtraFiles. Call it once at the start of serving, before any child is
// started; it is not for the sandbox helper, whose inherited descriptors are
// its protocol.
func CloseOnExecInherited() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	// Kernels before 5.11 have no CLOSE_RANGE_CLOEXEC: one fcntl each.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
