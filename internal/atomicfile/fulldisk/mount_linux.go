package fulldisk

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func mount(dir string, size int64) error {
	return unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", size))
}

// unmount detaches lazily so a file still open elsewhere cannot fail the
// cleanup.
func unmount(dir string) { _ = unix.Unmount(dir, unix.MNT_DETACH) }

func remount(dir string, ro bool) error {
	flags := uintptr(unix.MS_REMOUNT | unix.MS_NOSUID | unix.MS_NODEV)
	if ro {
		flags |= unix.MS_RDONLY
	}
	return unix.Mount("tmpfs", dir, "tmpfs", flags, "")
}
