package diskbound

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// available reports what this kernel lacks for bounded disks (nothing on
// Linux: the host checks are in Available).
func available() error { return nil }

// bindMount binds src onto dst.
func bindMount(src, dst string) error {
	return unix.Mount(src, dst, "", unix.MS_BIND, "")
}

func mountExt4(dev, mnt string) error {
	// discard punches the blocks of deleted files out of the image, so the
	// host holds only what is on the disk now. The lazily initialised inode
	// tables are never zeroed in the background (noinit_itable): that would
	// write megabytes to the host for nothing.
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOATIME)
	var err error
	for range 3 {
		// A just-configured loop device can briefly refuse to open.
		if err = unix.Mount(dev, mnt, "ext4", flags, "discard,noinit_itable"); !errors.Is(err, unix.EBUSY) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("mount %s: %w", dev, err)
	}
	return nil
}

// unmount unmounts p, detaching it lazily (and reporting busy) if something
// still holds it. p not being a mount point is not an error.
func unmount(p string) (busy bool, err error) {
	err = unix.Unmount(p, 0)
	if errors.Is(err, unix.EBUSY) {
		busy, err = true, unix.Unmount(p, unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) {
		return busy, fmt.Errorf("unmount %s: %w", p, err)
	}
	return busy, nil
}

// detach lazily unmounts p, ignoring errors (p may be gone already).
func detach(p string) { _ = unix.Unmount(p, unix.MNT_DETACH) }

// diskStat is the part of statfs a Disk reports, in bytes and inodes.
type diskStat struct {
	used, free, usedInodes, freeInodes int64
}

func statDisk(mnt string) (diskStat, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		return diskStat{}, err
	}
	return diskStat{
		used: int64(st.Blocks-st.Bfree) * st.Bsize, free: int64(st.Bavail) * st.Bsize,
		usedInodes: int64(st.Files - st.Ffree), freeInodes: int64(st.Ffree),
	}, nil
}
