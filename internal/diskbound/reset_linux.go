package diskbound

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Emptying a disk's directory in place. Removing and recreating "ws" and
// "tmp" after every run is costly on these journal-less file systems: ext4
// does not reuse an inode deleted in the last 30 s without a journal, so
// each new directory's inode is found by skipping, one inode-table lookup
// at a time, every directory the recent runs deleted (~0.2 ms per mkdir
// under steady load), and each removal frees and discards a block. A
// directory the run left empty and as it was made is instead given back
// its owner, mode and times.

// dirState is what a fresh directory's inode flags are (FS_IOC_GETFLAGS),
// so that a reused one can be told apart from one the run changed (chattr:
// e.g. synchronous writes).
type dirState struct {
	flags int
	known bool
}

// freshState reads the flags of the just-made directory at path.
func freshState(path string) dirState {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return dirState{}
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	return dirState{flags: flags, known: err == nil}
}

// resetInPlace makes the directory at path as a fresh one with mode would
// be (owner root, mode, times now) if the run left it empty, with no
// extended attribute (ACLs included) and the flags of fresh, and reports
// whether it did; if not, the caller recreates it.
func resetInPlace(path string, mode os.FileMode, fresh dirState) bool {
	if !fresh.known {
		return false
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if names, err := f.Readdirnames(1); len(names) > 0 || err != io.EOF {
		return false
	}
	if n, err := unix.Flistxattr(fd, nil); n != 0 || err != nil {
		return false
	}
	if flags, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS); err != nil || flags != fresh.flags {
		return false
	}
	perm := uint32(mode.Perm())
	if mode&os.ModeSticky != 0 {
		perm |= unix.S_ISVTX
	}
	// Owner first: chown clears set-id bits, which the mode then sets as
	// they should be (none).
	return unix.Fchown(fd, 0, 0) == nil && unix.Fchmod(fd, perm) == nil && touch(fd) == nil
}

// touch sets the times of the open file fd to now (futimens(fd, NULL)).
func touch(fd int) error {
	if _, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, 0, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}
