package driver

import (
	"os"

	"golang.org/x/sys/unix"
)

// growPipe asks for a 1 MiB buffer on the pipe w writes to (best effort:
// the default 64 KiB makes a large restore payload cost a context switch
// every 64 KiB; the kernel may refuse beyond its per-user pipe limits).
func growPipe(w *os.File) {
	_, _ = unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 1<<20)
}
