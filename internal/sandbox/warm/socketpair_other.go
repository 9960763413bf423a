//go:build !linux

package warm

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// socketpair returns a connected pair of unix stream sockets, close-on-exec
// (set after creation: no SOCK_CLOEXEC here; ForkLock keeps a concurrent
// fork from inheriting them meanwhile).
func socketpair() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	return fds, err
}

// pipe returns a pipe as server and child ends (the write end is the
// server's when toChild).
func pipe(toChild bool) (server, child *os.File, err error) {
	r, w, err := os.Pipe()
	if toChild {
		return w, r, err
	}
	return r, w, err
}
