package cgroup

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Control files are read and written with plain system calls, not os.File:
// cgroupfs files can be polled, so os.OpenFile registers each one with the
// runtime's poller and Close unregisters it — about four extra system calls
// (fcntl, epoll_ctl) around every one-line read or write, several times per
// run.

// atCwd is AT_FDCWD: paths relative to the working directory.
const atCwd = unix.AT_FDCWD

// readAt returns the contents of the control file at path relative to the
// directory dirfd.
func readAt(dirfd int, path string) ([]byte, error) {
	fd, err := openAt(dirfd, path, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 256)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case errors.Is(err, unix.EINTR):
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
func write(dir, file, val string) error { return writeAt(atCwd, filepath.Join(dir, file), val) }

// writeAt writes val to the control file at path relative to the directory
// dirfd.
func writeAt(dirfd int, path, val string) error {
	fd, err := openAt(dirfd, path, unix.O_WRONLY)
	if err == nil {
		err = writeAll(fd, val)
		if cerr := unix.Close(fd); err == nil {
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
		n, err := unix.Write(fd, []byte(val))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		case n < len(val):
			return unix.EIO // a control file takes a value whole or not at all
		}
		return nil
	}
}

func openAt(dirfd int, path string, mode int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, path, mode|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// Each Group holds an O_PATH descriptor of each of its directories, so
// that the many control file accesses of a run look up one name instead of
// walking the whole path below /sys/fs/cgroup each time.

// errDestroyed is what a Group's file accesses return after Destroy.
var errDestroyed = errors.New("cgroup: group destroyed")

// openDirs opens the group's directories (O_PATH).
func (g *Group) openDirs() error {
	if pathFlag == 0 {
		return nil // no O_PATH here: accesses use the paths
	}
	g.fds = make([]int, 0, len(g.dirs))
	for _, d := range g.dirs {
		fd, err := openAt(atCwd, d, pathFlag|unix.O_DIRECTORY|unix.O_NOFOLLOW)
		if err != nil {
			return fmt.Errorf("cgroup: open %s: %w", d, err)
		}
		g.fds = append(g.fds, fd)
	}
	return nil
}

// closeDirs closes the descriptors; later accesses fail with errDestroyed.
func (g *Group) closeDirs() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, fd := range g.fds {
		_ = unix.Close(fd)
	}
	g.fds, g.closed = nil, true
}

// get reads the control file named file of directory i (index in dirs).
func (g *Group) get(i int, file string) ([]byte, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	switch {
	case g.closed:
		return nil, errDestroyed
	case i < len(g.fds):
		return readAt(g.fds[i], file)
	}
	return readAt(atCwd, filepath.Join(g.dirs[i], file))
}

// set writes val to the control file named file of directory i.
func (g *Group) set(i int, file, val string) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	switch {
	case g.closed:
		return errDestroyed
	case i < len(g.fds):
		if err := writeAt(g.fds[i], file, val); err != nil {
			return fmt.Errorf("%w (in %s)", err, g.dirs[i])
		}
		return nil
	}
	return write(g.dirs[i], file, val)
}
