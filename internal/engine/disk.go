package engine

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/codexec/codexec/internal/diskbound"
)

// boundDisk lends the bounded disk of a workspace (Options.Disks): bound
// onto dir when codexec created dir (owned), so the workspace and /tmp
// share the limit; for a caller's working_dir, a disk for /tmp only (a host
// directory cannot be bounded). It returns nil and no error when disks are
// not bounded (subprocess mode, or a host that cannot: the Set found out
// while starting and said so loudly). Release the disk before removing dir.
func (e *Engine) boundDisk(dir string, owned bool) (*diskbound.Disk, error) {
	if e.opts.Disks == nil {
		return nil, nil
	}
	var d *diskbound.Disk
	var err error
	if owned {
		d, err = e.opts.Disks.Attach(dir)
	} else {
		d, err = e.opts.Disks.Scratch()
	}
	if errors.Is(err, diskbound.ErrUnavailable) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bounded disk: %w", err)
	}
	return d, nil
}

// tmpDir is the host directory a run on disk sees as /tmp ("" without a
// bounded disk: the backend's own size-limited tmpfs).
func tmpDir(disk *diskbound.Disk) string {
	if disk == nil {
		return ""
	}
	return disk.TmpDir()
}

// noteDiskFull tells a failed result why when its disk is full: "disk limit
// N MiB exceeded" leads the error message. Successful results and runs
// without a bounded disk are returned unchanged.
func noteDiskFull(res Result, disk *diskbound.Disk) Result {
	if res.Success || disk == nil || !disk.Full() {
		return res
	}
	msg := fmt.Sprintf("disk limit %d MiB exceeded (workspace and /tmp together)", disk.Limit()>>20)
	if res.ErrorMessage != nil && *res.ErrorMessage != "" {
		msg += ": " + *res.ErrorMessage
	}
	res.ErrorMessage = &msg
	f := res.End
	f.DiskFull = true
	return Ended(res, f)
}

// releaseDisk returns a run's disk to the pool (nil is fine).
func releaseDisk(disk *diskbound.Disk) {
	if disk == nil {
		return
	}
	if err := disk.Release(); err != nil {
		slog.Warn("bounded disk release", "err", err)
	}
}
