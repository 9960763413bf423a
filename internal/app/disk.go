package app

import (
	"errors"
	"log/slog"
	"path/filepath"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/diskbound"
	"github.com/codexec/codexec/internal/sandbox"
)

// disksDir holds the bounded disks' images and mount points. Callers may
// not use it as a working_dir.
func disksDir(cfg config.Config) string { return filepath.Join(cfg.SandboxDir, ".disks") }

// openDisks returns the bounded disks for an isolated backend, so
// CODEXEC_DISK_LIMIT covers each workspace and its /tmp together. They start
// in the background (start-up does not wait for mkfs). When the host cannot
// make them (not root, no loop devices, no mkfs.ext4, mounting fails) it
// says so loudly and runs fall back to bounding only /tmp (a tmpfs), as
// SECURITY.md describes. Subprocess mode gets none (its programs can write
// anywhere anyway).
func openDisks(cfg config.Config, backend sandbox.Backend) *diskbound.Set {
	if !backend.Isolated() {
		return nil
	}
	s, err := diskbound.New(diskbound.Options{Dir: disksDir(cfg), Bytes: cfg.DiskLimitBytes})
	if err != nil {
		warnUnbounded(err)
		return nil
	}
	go func() {
		err := s.Ready()
		if errors.Is(err, diskbound.ErrClosed) {
			return // the server stopped before the probe finished: nothing failed
		}
		if err != nil {
			warnUnbounded(err)
			return
		}
		slog.Info("disk limit covers workspace and /tmp", "limit_mib", s.Bytes()>>20, "inodes", s.Inodes())
	}()
	return s
}

func warnUnbounded(err error) {
	slog.Warn("!!! DISK LIMIT COVERS ONLY /tmp: bounded workspaces are unavailable (" + err.Error() +
		"); a run can fill the file system holding CODEXEC_SANDBOX_DIR; run `codexec doctor`")
}

// ProbeDisks makes and releases one bounded disk, as runs would get, and
// returns its inode count, or why runs get none.
func ProbeDisks(cfg config.Config) (inodes int64, err error) {
	s, err := diskbound.New(diskbound.Options{Dir: disksDir(cfg), Bytes: cfg.DiskLimitBytes})
	if err != nil {
		return 0, err
	}
	var d *diskbound.Disk
	if d, err = s.Scratch(); err == nil {
		err = d.Release()
	}
	return s.Inodes(), joinErr(err, s.Close())
}

func joinErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
