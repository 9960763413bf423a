//go:build !linux

package diskbound

import (
	"errors"
	"os"
)

// errNotLinux is why bounded disks are unavailable off Linux: they are
// loop devices holding ext4, mounted with Linux mount flags.
var errNotLinux = errors.New("bounded disks need Linux (loop devices and ext4 mounts)")

func available() error { return errNotLinux }

func bindMount(src, dst string) error { return errNotLinux }

func mountExt4(dev, mnt string) error { return errNotLinux }

func unmount(p string) (busy bool, err error) { return false, nil }

func detach(p string) {}

type diskStat struct {
	used, free, usedInodes, freeInodes int64
}

func statDisk(mnt string) (diskStat, error) { return diskStat{}, errNotLinux }

func attachLoop(f *os.File) (string, *os.File, error) { return "", nil, errNotLinux }
