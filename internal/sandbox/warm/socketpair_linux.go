package warm

import (
	"os"

	"golang.org/x/sys/unix"
)

// socketpair returns a connected pair of unix stream sockets, close-on-exec.
func socketpair() ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
}

// pipe returns a close-on-exec pipe whose end for the server (the write end
// when toChild, else the read end) is non-blocking and served by Go's
// poller, and whose end for the child stays blocking and outside the poller:
// a child end is only handed over and closed, and os.Pipe would register
// it with the poller and set it non-blocking (a few system calls each way).
func pipe(toChild bool) (server, child *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	s, c := p[0], p[1]
	if toChild {
		s, c = p[1], p[0]
	}
	if err := unix.SetNonblock(s, true); err != nil {
		_, _ = unix.Close(s), unix.Close(c)
		return nil, nil, err
	}
	return os.NewFile(uintptr(s), "runner-pipe"), os.NewFile(uintptr(c), "runner-pipe-child"), nil
}
