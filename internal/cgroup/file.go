package cgroup

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
)

// Control files are read and written with plain system calls, not os.File:
// cgroupfs files can be polled, so os.OpenFile registers each one with the
// runtime's poller and Close unregisters it — about four extra system calls
// (fcntl, epoll_ctl) around every one-line read or write, several times per
// run.

// readFile returns the contents of the control file at path.
func readFile(path string) ([]byte, error) {
	fd, err := openFile(path, syscall.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, 256)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return nil, fmt.Errorf("cgroup: read %s: %w", path, err)
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// write writes val to the control file named file in dir, in one write(2)
// as cgroupfs requires.
func write(dir, file, val string) error {
	path := filepath.Join(dir, file)
	fd, err := openFile(path, syscall.O_WRONLY)
	if err == nil {
		err = writeAll(fd, val)
		if cerr := syscall.Close(fd); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("cgroup: write %s=%q: %w", path, val, err)
	}
	return nil
}

func writeAll(fd int, val string) error {
	for {
		n, err := syscall.Write(fd, []byte(val))
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return err
		case n < len(val):
			return syscall.EIO // a control file takes a value whole or not at all
		}
		return nil
	}
}

func openFile(path string, mode int) (int, error) {
	for {
		fd, err := syscall.Open(path, mode|syscall.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}
