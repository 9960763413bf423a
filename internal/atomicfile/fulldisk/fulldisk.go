// Package fulldisk gives tests a small file system of their own that they
// can fill to the last byte and free again, or make read-only and writable
// again: a size-limited tmpfs mounted on
// a temporary directory and unmounted at the test's end. Tests of code that
// must survive a full disk (the execution log, atomic file writes) use it;
// where mounting is not permitted (not root, no CAP_SYS_ADMIN) the test is
// skipped with the reason.
package fulldisk

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Disk is a mounted tmpfs and the filler file that fills it.
type Disk struct {
	// Dir is the mount point.
	Dir    string
	t      testing.TB
	filler string
}

// Mount mounts a tmpfs of size bytes (rounded up to whole pages by the
// kernel) on a fresh temporary directory, or skips t when it cannot.
func Mount(t testing.TB, size int64) *Disk {
	t.Helper()
	dir := t.TempDir()
	if err := mount(dir, size); err != nil {
		t.Skipf("cannot mount a tmpfs to make a full disk (needs root): %v", err)
	}
	t.Cleanup(func() { unmount(dir) })
	return &Disk{Dir: dir, t: t, filler: filepath.Join(dir, "filler")}
}

// Fill writes into a filler file until the disk reports ENOSPC, so that no
// further byte fits. It fails the test on any other error.
func (d *Disk) Fill() {
	d.t.Helper()
	f, err := os.OpenFile(d.filler, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		_, err := f.Write(buf)
		if errors.Is(err, syscall.ENOSPC) {
			return
		}
		if err != nil {
			d.t.Fatalf("fill %s: %v", d.Dir, err)
		}
	}
}

// Leave frees n bytes of a filled disk (truncating the filler), so a write
// larger than n is cut short by ENOSPC.
func (d *Disk) Leave(n int64) {
	d.t.Helper()
	fi, err := os.Stat(d.filler)
	if err != nil {
		d.t.Fatal(err)
	}
	if err := os.Truncate(d.filler, max(fi.Size()-n, 0)); err != nil {
		d.t.Fatal(err)
	}
}

// Free removes the filler: the disk has room again.
func (d *Disk) Free() {
	d.t.Helper()
	if err := os.Remove(d.filler); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.t.Fatal(err)
	}
}

// ReadOnly remounts the disk read-only (true) or read-write (false).
func (d *Disk) ReadOnly(ro bool) {
	d.t.Helper()
	if err := remount(d.Dir, ro); err != nil {
		d.t.Fatalf("remount %s: %v", d.Dir, err)
	}
}
