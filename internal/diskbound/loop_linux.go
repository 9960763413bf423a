package diskbound

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// attachLoop attaches the image open as f to a free loop device and returns
// the device path and the open device. The device clears itself
// (LO_FLAGS_AUTOCLEAR) when its last user goes away: the caller mounts it,
// then closes the returned file, so unmounting is the whole teardown.
// Another process may grab the device between LOOP_CTL_GET_FREE and
// LOOP_CONFIGURE; that shows as EBUSY and the next free one is tried.
func attachLoop(f *os.File) (string, *os.File, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, err
	}
	defer ctl.Close()
	for range 16 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", nil, fmt.Errorf("LOOP_CTL_GET_FREE: %w", err)
		}
		dev := "/dev/loop" + strconv.Itoa(n)
		lo, err := configure(dev, f)
		if errors.Is(err, unix.EBUSY) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		return dev, lo, nil
	}
	return "", nil, errors.New("no free loop device (all attempts were taken by other processes)")
}

func configure(dev string, f *os.File) (*os.File, error) {
	lo, err := openLoop(dev)
	if err != nil {
		return nil, err
	}
	cfg := unix.LoopConfig{Fd: uint32(f.Fd()), Size: 4096} // Size: logical block size, as ext4's
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR | unix.LO_FLAGS_DIRECT_IO
	err = unix.IoctlLoopConfigure(int(lo.Fd()), &cfg)
	if errors.Is(err, unix.EINVAL) {
		// Direct I/O (no second copy in the page cache) needs the backing
		// file system's support; plain buffered I/O works everywhere.
		cfg.Info.Flags &^= unix.LO_FLAGS_DIRECT_IO
		err = unix.IoctlLoopConfigure(int(lo.Fd()), &cfg)
	}
	if err != nil {
		_ = lo.Close()
		return nil, fmt.Errorf("LOOP_CONFIGURE %s: %w", dev, err)
	}
	return lo, nil
}

// openLoop opens dev, creating the node when the kernel made the device but
// no devtmpfs/udev did (containers with a static /dev).
func openLoop(dev string) (*os.File, error) {
	f, err := os.OpenFile(dev, os.O_RDWR|unix.O_CLOEXEC, 0)
	if !errors.Is(err, os.ErrNotExist) {
		return f, err
	}
	n, _ := strconv.Atoi(dev[len("/dev/loop"):])
	if err := unix.Mknod(dev, unix.S_IFBLK|0o660, int(unix.Mkdev(7, uint32(n)))); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create %s: %w", dev, err)
	}
	return os.OpenFile(dev, os.O_RDWR|unix.O_CLOEXEC, 0)
}
