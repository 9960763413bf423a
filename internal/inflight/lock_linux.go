package inflight

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lock takes f's exclusive lock, waiting for it. The kernel releases it when
// the last descriptor of f closes, so also when its process dies, whatever
// pid namespace it was in.
func lock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX) }

// tryLock takes f's exclusive lock if it is free; held reports that another
// open file holds it.
func tryLock(f *os.File) (held bool, err error) {
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}

// sameFile reports whether f is still the file at path.
func sameFile(f *os.File, path string) bool {
	var a, b unix.Stat_t
	return unix.Fstat(int(f.Fd()), &a) == nil && unix.Stat(path, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
}
