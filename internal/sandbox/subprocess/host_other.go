//go:build !linux

package subprocess

import (
	"errors"
	"syscall"
)

// becomeSubreaper does nothing: child subreapers are Linux's. Orphans of
// runs are then found only by their run marker when a server starts.
func becomeSubreaper() {}

// groupAttr starts a child in its own process group (no parent-death
// signal here).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// limitFileSize fails when a cap is asked for: a running process's limits
// cannot be changed here, so such runs start cold (through sandbox-fsize).
func limitFileSize(pid int, bytes int64) error {
	if bytes <= 0 {
		return nil
	}
	return errors.New("subprocess: a warm runner's file size cannot be capped on this system")
}
