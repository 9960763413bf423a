package cgroup

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockDir takes the exclusive lock of the open directory f, waiting while
// a sweep probes it. The kernel releases it when the last descriptor of f
// closes: when its process exits, in whatever pid namespace.
func lockDir(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX) }

// sameDir reports whether the open f is the directory at path.
func sameDir(f *os.File, path string) bool {
	var a, b unix.Stat_t
	return unix.Fstat(int(f.Fd()), &a) == nil && unix.Stat(path, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}

// lockHeld reports whether a process holds the lock of directory dir; ok is
// false when that cannot be told (dir cannot be opened).
func lockHeld(dir string) (held, ok bool) {
	f, err := os.Open(dir)
	if err != nil {
		return false, false
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, true
	}
	return false, err == nil
}
