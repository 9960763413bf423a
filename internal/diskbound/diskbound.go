// Package diskbound gives each workspace its own small file system, so the
// bytes and inodes a run or session can write — workspace and /tmp together
// — stop at a limit with ENOSPC, and the host never holds more than that
// limit for it.
//
// A Disk is a sparse image file the size of the limit, formatted as ext4
// (without journal, inode count proportional to the size), attached to a
// loop device and mounted privately under Options.Dir. Its two top-level
// directories are bound where the sandbox needs them: "ws" onto the
// workspace path, "tmp" is handed to the backend as the program's /tmp.
// The file system is formatted once per Set (one mkfs.ext4 run at start-up);
// every Disk is then a copy of that template's few metadata blocks (about
// 150 KiB) into a fresh sparse file, one loop ioctl and two mounts, and no
// process is spawned per run.
//
// Why not quotas: project quotas on one shared XFS or ext4 file system would
// be cheaper still, but they need kernel options (CONFIG_XFS_QUOTA,
// CONFIG_QFMT_V2) that common VM kernels lack; loop devices and ext4 are
// nearly universal. Why not tmpfs: its pages count against the memory cgroup
// (RAM), and a caller's working_dir is a host directory anyway.
//
// A Set needs root, /dev/loop-control and mkfs.ext4 (e2fsprogs); New says
// what is missing so callers can fall back loudly.
package diskbound

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// BytesPerInode sets the inode count of a disk: one inode per this many
// bytes of its size (a 256 MiB disk holds 32768 files and directories).
const BytesPerInode = 8192

// MinBytes is the smallest disk New accepts.
const MinBytes = 4 << 20

// Options configure a Set.
type Options struct {
	// Dir holds the image files and private mount points (created if
	// missing). It must be on a local file system with room for the
	// images and must not be visible inside sandboxes.
	Dir string
	// Bytes is the size of every disk: the limit on what one workspace and
	// its /tmp can hold together, metadata included.
	Bytes int64
}

// poolSize disks are kept mounted and empty, ready for the next run; up to
// spare more returned by finished runs are kept too. Beyond that, returned
// disks are kept (up to maxFree) until they have been idle for idleTTL:
// runs in flight go up and down by more than spare, and a disk destroyed
// when they go down had to be made again (image written, loop device, ext4
// mount) when they went up.
const (
	poolSize = 2
	spare    = 2
	maxFree  = 64
)

// idleTTL is how long a disk beyond poolSize+spare stays ready unused.
var idleTTL = 30 * time.Second

// Set lends bounded disks of one size. Making a disk costs ~20 ms (loop
// device, mount) and destroying one ~40 ms (mostly waiting for the kernel),
// so disks are made ahead in the background and reused: a finished run's
// disk is emptied (its two directories reset, see Disk.reset) and lent
// again. A run therefore pays a bind mount and an unmount (~0.5 ms). It is
// safe for concurrent use.
type Set struct {
	opts     Options
	template []extent
	inodes   int64
	seq      atomic.Int64

	ready   chan struct{}
	initErr error

	mu sync.Mutex
	// free holds the ready disks, least recently returned first.
	free    []*Disk
	filling int
	closed  bool
	trim    *time.Timer // armed while free holds more than poolSize+spare
	bg      sync.WaitGroup
}

// extent is one data range of the formatted template image.
type extent struct {
	off  int64
	data []byte
}

// ErrUnavailable wraps the reason a Set cannot lend disks on this host
// (found while it started in the background): callers fall back to
// unbounded workspaces.
var ErrUnavailable = errors.New("bounded disks unavailable")

// ErrClosed is what Ready wraps when the Set was closed before it finished
// starting: the disks were not unavailable, the server just stopped first.
var ErrClosed = errors.New("bounded disks closed while starting")

// New checks cheaply that bounded disks can be made here, removes what
// earlier, dead codexec servers left in o.Dir (their disks' mounts, over
// workspaces too: those workspaces can then be removed as soon as New
// returns) and returns; in the background it formats the template (one
// mkfs.ext4, ~50 ms) and makes the first disks. The first lending waits for
// that; if it failed, every lending returns an error wrapping
// ErrUnavailable (see Ready).
func New(o Options) (*Set, error) {
	if o.Bytes < MinBytes {
		return nil, fmt.Errorf("disk limit %d bytes is below the %d MiB minimum", o.Bytes, MinBytes>>20)
	}
	o.Bytes &^= 4095
	if err := Available(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	if n := sweep(o.Dir); n > 0 {
		slog.Info("removed bounded disks left by earlier codexec servers", "count", n)
	}
	s := &Set{opts: o, inodes: max(1024, o.Bytes/BytesPerInode), ready: make(chan struct{})}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer close(s.ready)
		s.initErr = s.start()
	}()
	return s, nil
}

// start formats the template and makes one disk as a probe.
func (s *Set) start() error {
	var err error
	if s.template, err = s.format(); err != nil {
		return err
	}
	d, err := s.make()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.Join(ErrClosed, d.destroy())
	}
	d.idleSince = time.Now()
	s.free = append(s.free, d)
	s.refillLocked()
	return nil
}

// Ready waits until the Set has started and returns nil if it can lend
// disks, ErrClosed if Close came first, else an error wrapping
// ErrUnavailable with the reason.
func (s *Set) Ready() error {
	<-s.ready
	if errors.Is(s.initErr, ErrClosed) {
		return ErrClosed
	}
	if s.initErr != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, s.initErr)
	}
	return nil
}

// Close destroys the idle disks and waits for background work. Disks still
// lent are destroyed by their Release. Safe to call more than once.
func (s *Set) Close() error {
	s.mu.Lock()
	s.closed = true
	idle := s.free
	s.free = nil
	if s.trim != nil {
		s.trim.Stop()
	}
	s.mu.Unlock()
	var errs []error
	for _, d := range idle {
		errs = append(errs, d.destroy())
	}
	s.bg.Wait()
	return errors.Join(errs...)
}

// Available reports why bounded disks cannot be made on this host (not
// root, no loop devices, no mkfs.ext4), or nil.
func Available() error {
	if err := available(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("bounded disks need codexec to run as root (loop devices, mounts)")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return errors.New("no loop device support (/dev/loop-control missing)")
	}
	if _, err := mkfsPath(); err != nil {
		return err
	}
	return nil
}

func mkfsPath() (string, error) {
	for _, p := range []string{"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		return "", errors.New("mkfs.ext4 not found (Debian/Ubuntu: apt-get install e2fsprogs)")
	}
	return p, nil
}

// Bytes returns the size of every disk of the set.
func (s *Set) Bytes() int64 { return s.opts.Bytes }

// Inodes returns the inode count of every disk of the set.
func (s *Set) Inodes() int64 { return s.inodes }

// format runs mkfs.ext4 once on a scratch image and keeps its data ranges.
// No journal (the disks are scratch space, emptied between runs), lazy
// inode tables (never written until used), no reserved blocks. The root
// directory is created empty (no -d: that would copy the host directory's
// ACLs and xattrs); make adds "ws" and "tmp".
func (s *Set) format() ([]extent, error) {
	mkfs, err := mkfsPath()
	if err != nil {
		return nil, err
	}
	img := filepath.Join(s.opts.Dir, "template-"+strconv.Itoa(os.Getpid())+".img")
	defer os.Remove(img)
	if err := sparseFile(img, s.opts.Bytes); err != nil {
		return nil, err
	}
	cmd := exec.Command(mkfs, "-q", "-F", "-b", "4096", "-m", "0", "-I", "256",
		"-N", strconv.FormatInt(s.inodes, 10), "-O", "^has_journal,^resize_inode",
		"-E", "lazy_itable_init=1,nodiscard,root_owner=0:0", "-L", "codexec", img)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mkfs.ext4: %v: %s", err, out)
	}
	return readExtents(img)
}

func sparseFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return err
	}
	return f.Close()
}

// readExtents returns the non-hole ranges of the file at path.
func readExtents(path string) ([]extent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fd := int(f.Fd())
	var out []extent
	var total int64
	for off := int64(0); ; {
		start, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break
		}
		if err != nil {
			return nil, err
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err != nil {
			return nil, err
		}
		if total += end - start; total > 64<<20 {
			return nil, errors.New("formatted template is unexpectedly large (no sparse file support?)")
		}
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil {
			return nil, err
		}
		out = append(out, extent{start, buf})
		off = end
	}
	return out, nil
}
