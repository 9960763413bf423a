//go:build !linux

package warm

import (
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
