package diskbound

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func newSet(t testing.TB, bytes int64) *Set {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("bounded disks unavailable here: %v", err)
	}
	s, err := New(Options{Dir: filepath.Join(t.TempDir(), ".disks"), Bytes: bytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// fill writes 1 MiB chunks to path until an error or max MiB; it returns the
// bytes written and the error.
func fill(path string, maxMiB int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for range maxMiB {
		m, err := f.Write(buf)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, f.Sync()
}

func TestWorkspaceAndTmpShareTheLimit(t *testing.T) {
	const limit = 16 << 20
	s := newSet(t, limit)
	ws := filepath.Join(t.TempDir(), "exec_1")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := s.Attach(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	if d.Full() {
		t.Fatal("fresh disk reports full")
	}
	n1, err := fill(filepath.Join(d.TmpDir(), "a"), 10)
	if err != nil || n1 != 10<<20 {
		t.Fatalf("10 MiB in tmp: wrote %d, %v", n1, err)
	}
	n2, err := fill(filepath.Join(ws, "b"), 2048)
	if !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("want ENOSPC writing 2 GiB into the workspace, got %v after %d bytes", err, n2)
	}
	if n1+n2 > limit {
		t.Fatalf("wrote %d bytes in total, limit %d", n1+n2, limit)
	}
	if !d.Full() {
		var st unix.Statfs_t
		_ = unix.Statfs(d.mnt, &st)
		t.Fatalf("disk not reported full after ENOSPC (wrote %d+%d): %+v", n1, n2, st)
	}
	var st unix.Stat_t
	if err := unix.Stat(d.image, &st); err != nil {
		t.Fatal(err)
	}
	if host := st.Blocks * 512; host > limit {
		t.Fatalf("image holds %d bytes on the host, limit %d", host, limit)
	}
	if err := d.Release(); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(ws); err != nil || len(entries) != 0 {
		t.Fatalf("workspace after release: %v %v", entries, err)
	}
	// The disk went back to the pool emptied; discard gave the blocks back.
	if err := unix.Stat(d.image, &st); err != nil {
		t.Fatal(err)
	}
	if host := st.Blocks * 512; host > 1<<20 {
		t.Fatalf("released disk still holds %d bytes on the host", host)
	}
	again, err := s.Attach(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Release()
	if entries, err := os.ReadDir(ws); err != nil || len(entries) != 0 || again.Full() {
		t.Fatalf("reused disk not empty: %v %v full=%v", entries, err, again.Full())
	}
}

func TestInodeFloodStops(t *testing.T) {
	s := newSet(t, 8<<20)
	d, err := s.Scratch()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	var made int64
	var ferr error
	for made = 0; made < 1<<20; made++ {
		if ferr = os.WriteFile(filepath.Join(d.TmpDir(), strconv.FormatInt(made, 10)), nil, 0o644); ferr != nil {
			break
		}
	}
	if !errors.Is(ferr, unix.ENOSPC) || made > s.Inodes() {
		t.Fatalf("made %d files (inodes %d), last error %v", made, s.Inodes(), ferr)
	}
	if !d.Full() {
		t.Fatal("disk not reported full after the inode flood")
	}
}

func TestSweepRemovesDeadServersDisks(t *testing.T) {
	s := newSet(t, 8<<20)
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := s.Attach(ws)
	if err != nil {
		t.Fatal(err)
	}
	// Pretend the disk belongs to a server that died: rename its image and
	// mount point to a pid that does not exist.
	dead := "999999999-1"
	if err := os.Rename(d.image, filepath.Join(s.opts.Dir, dead+".img")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(d.mnt, filepath.Join(s.opts.Dir, mustMkdir(t, s.opts.Dir, dead)), "", unix.MS_MOVE, ""); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(d.mnt)
	if n := sweep(s.opts.Dir); n != 1 {
		t.Fatalf("swept %d disks, want 1", n)
	}
	for _, m := range mountInfo() {
		if m.point == ws || m.point == filepath.Join(s.opts.Dir, dead) {
			t.Fatalf("mount left after sweep: %s", m.point)
		}
	}
	for _, p := range []string{dead, dead + ".img"} {
		if _, err := os.Stat(filepath.Join(s.opts.Dir, p)); !os.IsNotExist(err) {
			t.Fatalf("%s left after sweep: %v", p, err)
		}
	}
}

func mustMkdir(t *testing.T, dir, name string) string {
	t.Helper()
	if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
		t.Fatal(err)
	}
	return name
}

// BenchmarkAttachRelease compares, interleaved in one loop, a plain
// workspace (mkdir + RemoveAll, what runs get without a bound) with a
// bounded one (Attach + Release of a 256 MiB disk).
//
//	go test ./internal/diskbound/ -run '^$' -bench AttachRelease -benchtime 200x
func BenchmarkAttachRelease(b *testing.B) {
	s := newSet(b, 256<<20)
	root := b.TempDir()
	var plain, bounded time.Duration
	i := 0
	for b.Loop() {
		i++
		ws := filepath.Join(root, "exec_"+strconv.Itoa(i))
		t0 := time.Now()
		if err := os.Mkdir(ws, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "out.txt"), []byte("hello\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		_ = os.RemoveAll(ws)
		t1 := time.Now()
		if err := os.Mkdir(ws, 0o755); err != nil {
			b.Fatal(err)
		}
		d, err := s.Attach(ws)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "out.txt"), []byte("hello\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := d.Release(); err != nil {
			b.Fatal(err)
		}
		_ = os.RemoveAll(ws)
		bounded += time.Since(t1)
		plain += t1.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(plain.Microseconds())/n, "plain-µs/op")
	b.ReportMetric(float64(bounded.Microseconds())/n, "bounded-µs/op")
	b.ReportMetric(float64(bounded-plain)/n/1e6, "added-ms/op")
}

// TestUnavailableIsReported: a Set that cannot make disks (here: an image
// larger than any file the host allows) says so through ErrUnavailable, so
// callers can fall back.
func TestUnavailableIsReported(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("bounded disks unavailable here: %v", err)
	}
	s, err := New(Options{Dir: filepath.Join(t.TempDir(), ".disks"), Bytes: 1 << 62})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ready(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Ready: %v, want ErrUnavailable", err)
	}
	if _, err := s.Scratch(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Scratch: %v, want ErrUnavailable", err)
	}
}

// Disks returned beyond poolSize+spare are lent again without being made
// anew while they are fresh, and destroyed once idle for idleTTL.
func TestIdleDisksKeptThenTrimmed(t *testing.T) {
	defer func(ttl time.Duration) { idleTTL = ttl }(idleTTL)
	idleTTL = 300 * time.Millisecond
	s := newSet(t, MinBytes)
	lend := func(n int) []*Disk {
		var ds []*Disk
		for range n {
			d, err := s.Scratch()
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, d)
		}
		return ds
	}
	ds := lend(8)
	for _, d := range ds {
		if err := d.Release(); err != nil {
			t.Fatal(err)
		}
	}
	waitFilled(t, s)
	made := s.seq.Load()
	for _, d := range lend(8) { // all from the pool: nothing made
		_ = d.Release()
	}
	waitFilled(t, s)
	if got := s.seq.Load(); got != made {
		t.Errorf("lending 8 again made %d new disks; want 0", got-made)
	}
	s.mu.Lock()
	before := len(s.free)
	s.mu.Unlock()
	if before <= poolSize+spare {
		t.Fatalf("%d disks kept after a burst of 8; want more than %d", before, poolSize+spare)
	}
	// Trimmed disks are taken from the pool, then destroyed in the
	// background: wait until only the pool's mount points are left.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		n := len(s.free)
		s.mu.Unlock()
		if n == poolSize+spare && mountDirs(t, s) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d disks kept, %d mount points after idling; want %d", n, mountDirs(t, s), poolSize+spare)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mountDirs counts the disks' mount points in the Set's directory.
func mountDirs(t *testing.T, s *Set) int {
	t.Helper()
	entries, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() {
			n++
		}
	}
	return n
}

// waitFilled waits until no disk is being made.
func waitFilled(t *testing.T, s *Set) {
	t.Helper()
	for i := 0; ; i++ {
		s.mu.Lock()
		f := s.filling
		s.mu.Unlock()
		if f == 0 {
			return
		}
		if i > 500 {
			t.Fatal("disks still being made after 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A released disk's "ws" and "tmp" come back as freshly made ones whatever
// the run did to them: kept when the run left them empty, made
// anew otherwise, and owned by root with their mode, current times, no
// extended attributes and default flags either way.
func TestReleaseResetsDirectories(t *testing.T) {
	s := newSet(t, MinBytes)
	setFlag := func(p string, flag int) {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		f, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
		if err == nil {
			err = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, f|flag)
		}
		if err != nil {
			t.Fatalf("set flags of %s: %v", p, err)
		}
	}
	old := time.Now().Add(-time.Hour)
	for _, tc := range []struct {
		name    string
		run     func(p string) // what the run did to the directory p
		inPlace bool
	}{
		{"untouched", func(string) {}, true},
		{"chown chmod utimes", func(p string) {
			must(t, os.Chown(p, 65534, 65534))
			must(t, os.Chmod(p, 0o2700))
			must(t, os.Chtimes(p, old, old))
		}, true},
		{"file left", func(p string) { must(t, os.WriteFile(filepath.Join(p, "x"), []byte("x"), 0o644)) }, false},
		{"file created and removed", func(p string) {
			must(t, os.WriteFile(filepath.Join(p, "x"), []byte("x"), 0o644))
			must(t, os.Remove(filepath.Join(p, "x")))
		}, true},
		{"xattr", func(p string) { must(t, unix.Setxattr(p, "user.codexec-test", []byte("1"), 0)) }, false},
		{"sync flag", func(p string) { setFlag(p, fsSyncFlag) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := s.Scratch()
			if err != nil {
				t.Fatal(err)
			}
			dirs := map[string]os.FileMode{filepath.Join(d.mnt, "ws"): 0o755 | os.ModeDir, d.TmpDir(): 0o777 | os.ModeDir | os.ModeSticky}
			births := map[string]unix.StatxTimestamp{}
			for p := range dirs {
				births[p] = born(t, p)
				tc.run(p)
			}
			// File system clocks tick coarsely (a jiffy): a directory made
			// again right away could be born in the same tick.
			time.Sleep(20 * time.Millisecond)
			start := time.Now().Add(-time.Second)
			if err := d.Release(); err != nil {
				t.Fatal(err)
			}
			for p, mode := range dirs {
				fi, err := os.Lstat(p)
				if err != nil {
					t.Fatal(err)
				}
				st := fi.Sys().(*syscall.Stat_t)
				if fi.Mode() != mode || st.Uid != 0 || st.Gid != 0 || fi.ModTime().Before(start) {
					t.Errorf("%s: mode %v owner %d:%d mtime %v after release; want %v root-owned, now", p, fi.Mode(), st.Uid, st.Gid, fi.ModTime(), mode)
				}
				if n, _ := unix.Listxattr(p, make([]byte, 256)); n != 0 {
					t.Errorf("%s: extended attributes left", p)
				}
				if entries, _ := os.ReadDir(p); len(entries) != 0 {
					t.Errorf("%s: %d entries left", p, len(entries))
				}
				if same := born(t, p) == births[p]; same != tc.inPlace {
					t.Errorf("%s: reset in place %v; want %v", p, same, tc.inPlace)
				}
				if fresh := freshState(p); fresh != d.fresh {
					t.Errorf("%s: flags %#x after release; want %#x", p, fresh.flags, d.fresh.flags)
				}
			}
		})
	}
}

// born identifies the directory at p: its creation time (the inode number
// of a recreated directory may be the same).
func born(t *testing.T, p string) unix.StatxTimestamp {
	t.Helper()
	var st unix.Statx_t
	must(t, unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &st))
	if st.Mask&unix.STATX_BTIME == 0 {
		t.Skip("no creation times on this file system")
	}
	return st.Btime
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fsSyncFlag is FS_SYNC_FL (linux/fs.h: chattr +S), which a directory's
// owner may set.
const fsSyncFlag = 0x8
