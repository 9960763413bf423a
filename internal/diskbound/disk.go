package diskbound

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Disk is one bounded file system lent to a run or session. TmpDir, Limit,
// Usage, Full and Release are safe for concurrent use; BindWorkspace must
// happen before the disk is shared.
type Disk struct {
	set       *Set
	image     string
	mnt       string
	workspace string
	once      sync.Once
	err       error
	// idleSince is when the disk last went back to the pool.
	idleSince time.Time
	// fresh is the state of a just-made "ws" or "tmp" (see resetInPlace).
	fresh dirState
}

// Attach lends a disk and binds its workspace directory onto dir (see
// BindWorkspace). Everything written below dir and in TmpDir counts against
// the one limit. Release undoes it.
func (s *Set) Attach(dir string) (*Disk, error) {
	d, err := s.take()
	if err != nil {
		return nil, err
	}
	if err := d.BindWorkspace(dir); err != nil {
		_ = d.Release()
		return nil, err
	}
	return d, nil
}

// BindWorkspace binds the disk's workspace directory onto dir, which must
// be an existing, empty directory codexec owns (the one-shot or session
// workspace). A disk lent by Scratch ahead of time (e.g. to a pooled runner
// whose /tmp is already TmpDir) gets its workspace this way once the
// workspace is known. At most once per lending.
func (d *Disk) BindWorkspace(dir string) error {
	if d.workspace != "" {
		return fmt.Errorf("bounded disk already bound to %s", d.workspace)
	}
	if err := bindMount(filepath.Join(d.mnt, "ws"), dir); err != nil {
		return fmt.Errorf("bind bounded workspace onto %s: %w", dir, err)
	}
	d.workspace = dir
	return nil
}

// Scratch lends a disk for /tmp only: a caller's working_dir is a host
// directory this package cannot bound. BindWorkspace may add a workspace.
func (s *Set) Scratch() (*Disk, error) { return s.take() }

// take returns a ready disk from the pool, or makes one (slower: a loop
// device and a mount, ~20 ms), and tops the pool up in the background.
func (s *Set) take() (*Disk, error) {
	if err := s.Ready(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("bounded disks: closed")
	}
	var d *Disk
	if n := len(s.free); n > 0 {
		d, s.free = s.free[n-1], s.free[:n-1]
	}
	s.refillLocked()
	s.mu.Unlock()
	if d != nil {
		return d, nil
	}
	return s.make()
}

// refillLocked starts making disks until poolSize are ready or on the way.
func (s *Set) refillLocked() {
	for !s.closed && len(s.free)+s.filling < poolSize {
		s.filling++
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			d, err := s.make()
			s.mu.Lock()
			s.filling--
			keep := err == nil && !s.closed
			if keep {
				d.idleSince = time.Now()
				s.free = append(s.free, d)
			}
			s.mu.Unlock()
			if err != nil {
				slog.Warn("bounded disk: could not prepare a spare", "err", err)
			} else if !keep {
				_ = d.destroy()
			}
		}()
	}
}

// make writes the template into a fresh sparse image, attaches it to a loop
// device and mounts it privately.
func (s *Set) make() (*Disk, error) {
	name := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(s.seq.Add(1), 10)
	d := &Disk{set: s, image: filepath.Join(s.opts.Dir, name+".img"), mnt: filepath.Join(s.opts.Dir, name)}
	f, err := s.writeImage(d.image)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := os.Mkdir(d.mnt, 0o700); err != nil {
		_ = os.Remove(d.image)
		return nil, err
	}
	dev, lo, err := attachLoop(f)
	if err == nil {
		// The loop device clears itself when the mount goes; until the mount
		// holds it, our open descriptor does.
		err = mountExt4(dev, d.mnt)
		_ = lo.Close()
	}
	if err != nil {
		_ = os.Remove(d.mnt)
		_ = os.Remove(d.image)
		return nil, err
	}
	if err := d.reset(); err != nil {
		return nil, errors.Join(err, d.destroy())
	}
	return d, nil
}

func (s *Set) writeImage(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	err = f.Truncate(s.opts.Bytes)
	for _, e := range s.template {
		if err != nil {
			break
		}
		_, err = f.WriteAt(e.data, e.off)
	}
	if err == nil {
		err = f.Sync() // the loop device reads it with direct I/O
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("write disk image: %w", err)
	}
	return f, nil
}

// TmpDir is the host directory to expose as the program's /tmp (mode 1777).
func (d *Disk) TmpDir() string { return filepath.Join(d.mnt, "tmp") }

// Limit is the disk's size in bytes.
func (d *Disk) Limit() int64 { return d.set.opts.Bytes }

// Usage reports the bytes and inodes in use (file system metadata included).
func (d *Disk) Usage() (bytes, inodes int64, err error) {
	st, err := statDisk(d.mnt)
	if err != nil {
		return 0, 0, err
	}
	return st.used, st.usedInodes, nil
}

// Full reports whether the disk has run out of space or inodes: less than
// max(1 MiB, 1/64 of the size) free, or no free inode. ext4 refuses a write
// with ENOSPC while statfs still shows some free blocks (delayed allocation
// keeps a reserve), hence the margin. A program that got ENOSPC finds the
// disk full when it ends, unless it deleted files since.
func (d *Disk) Full() bool {
	st, err := statDisk(d.mnt)
	if err != nil {
		return false
	}
	return st.free < max(1<<20, d.set.opts.Bytes/64) || st.freeInodes == 0
}

// Release unbinds the workspace (which becomes an ordinary empty directory
// again, left to the caller), deletes everything on the disk and returns it
// to the pool, or destroys it when the pool is full or closed. Call it only
// once nothing of the run is left running. Safe to call more than once;
// only the first call acts.
func (d *Disk) Release() error {
	d.once.Do(func() { d.err = d.release() })
	return d.err
}

func (d *Disk) release() error {
	if d.workspace != "" {
		// Busy means something still uses the workspace: never lend such a
		// disk again.
		if busy, err := unmount(d.workspace); busy || err != nil {
			return errors.Join(err, d.destroy())
		}
	}
	if err := d.reset(); err != nil {
		return errors.Join(err, d.destroy())
	}
	s := d.set
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return d.destroy()
	case len(s.free) < maxFree:
		s.free = append(s.free, &Disk{set: s, image: d.image, mnt: d.mnt, idleSince: time.Now(), fresh: d.fresh})
		if len(s.free) > poolSize+spare && s.trim == nil {
			s.trim = time.AfterFunc(idleTTL, s.trimIdle)
		}
	default:
		// Added under the lock while not closed, so Close's Wait sees it.
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			if err := d.destroy(); err != nil {
				slog.Warn("bounded disk: destroy", "err", err)
			}
		}()
	}
	return nil
}

// trimIdle destroys the disks beyond poolSize+spare that have been idle for
// idleTTL, and comes back for the others when they will have been.
func (s *Set) trimIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trim = nil
	if s.closed {
		return
	}
	var old []*Disk
	for len(s.free) > poolSize+spare && time.Since(s.free[0].idleSince) >= idleTTL {
		old = append(old, s.free[0])
		s.free = s.free[1:]
	}
	if len(s.free) > poolSize+spare {
		s.trim = time.AfterFunc(idleTTL-time.Since(s.free[0].idleSince), s.trimIdle)
	}
	if len(old) == 0 {
		return
	}
	s.bg.Add(1) // under the lock while not closed, so Close's Wait sees it
	go func() {
		defer s.bg.Done()
		for _, d := range old {
			if err := d.destroy(); err != nil {
				slog.Warn("bounded disk: destroy", "err", err)
			}
		}
	}()
}

// reset empties the disk's "ws" and "tmp" directories and gives them their
// original owner, mode, times and no extended attributes, whatever the run
// did: in place when the run left them empty and unchanged otherwise
// (resetInPlace), else by removing and recreating them.
func (d *Disk) reset() error {
	for _, sub := range []struct {
		name string
		mode os.FileMode
	}{{"ws", 0o755}, {"tmp", 0o777 | os.ModeSticky}} {
		p := filepath.Join(d.mnt, sub.name)
		if resetInPlace(p, sub.mode, d.fresh) {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return err
		}
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(p, sub.mode); err != nil {
			return err
		}
		if sub.name == "ws" {
			d.fresh = freshState(p)
		}
	}
	return nil
}

// destroy unmounts the disk (the loop device clears itself) and removes its
// image and mount point.
func (d *Disk) destroy() error {
	_, err := unmount(d.mnt)
	return errors.Join(err, os.Remove(d.mnt), os.Remove(d.image))
}
