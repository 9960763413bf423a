//go:build !linux

package files

import (
	"errors"

	"golang.org/x/sys/unix"
)

// openPath stands in for Linux's O_PATH, which other kernels lack.
const openPath = unix.O_RDONLY

// errNoOpenat2 is why workspace file access is unavailable off Linux: every
// lookup below a Root must be confined to it by the kernel (openat2 with
// RESOLVE_BENEATH), and no other kernel offers that in one call.
var errNoOpenat2 = errors.New("workspace file access needs Linux (openat2 RESOLVE_BENEATH)")

func (r *Root) openBeneath(rel string, flags uint64) (int, error) { return -1, errNoOpenat2 }

func renameAt(dfd int, from, to string, overwrite bool) error { return errNoOpenat2 }
