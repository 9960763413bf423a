//go:build linux

package namespace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The template mount namespace. bwrap re-reads /proc/self/mountinfo after
// every bind it makes, and each read formats every mount of the namespace
// it copied: started from the host's (~50 mounts idle, ~125 under load with
// the other runs' staging mounts and disks) that was a quarter of a run's
// kernel time. So bwrap starts from a small namespace instead: the server
// builds one, once, holding only what a sandbox may see of the host, all
// read-only:
//
//	/            tmpfs, read-only, 0755 root
//	/usr         the host's /usr (recursive), and /bin, /lib… as on the host
//	/etc         only the etcFiles, the sandbox's group file (the same for
//	             every run) and an empty passwd to mount each run's over
//	/var/cache/fontconfig, /opt/codexec/init (the helper)
//	/proc, /dev  a proc of the host's pid namespace and the host's /dev
//	/tmp         empty: bwrap's own scratch mount point
//	/.s/dK /.s/fK  empty directories and files: a run's mount points
//
// Each run's launcher (sandbox-init, still root) joins it, unshares a
// private copy (~12 mounts), moves the run's host trees (workspace, /tmp
// disk, program directory, spec mounts; detached clones the server made
// with open_tree) onto /.s points of that copy, and only then drops its
// privileges and executes bwrap. Nothing of a run reaches the template:
// its mounts are in its private copy, and the template's file systems are
// read-only mounts. The namespace lives as long as the server holds its
// descriptor; there is no holder process, so the kernel frees it however
// the server ends (nothing to sweep after a kill -9).

// templatePoints is how many directory (and file) mount points a run can
// use in the template; a run needing more starts from the host namespace.
const templatePoints = 24

// pointsDir holds the template's mount points.
const pointsDir = "/.s"

// errNoTemplate means a run needs more mount points than the template has.
var errNoTemplate = errors.New("too many mounts for the template namespace")

// templateOK reports whether bwrap at path is reachable in the template.
func templateOK(o Options) error {
	if !strings.HasPrefix(filepath.Clean(o.Bwrap), "/usr/") {
		return fmt.Errorf("bwrap %s is outside /usr", o.Bwrap)
	}
	// A run's own points: workspace, /tmp, program directory, a few mounts.
	if len(o.ReadOnly)+8 > templatePoints {
		return fmt.Errorf("%d read-only directories leave too few template mount points", len(o.ReadOnly))
	}
	return nil
}

// newTemplate builds the template namespace on a thread of its own, which
// exits afterwards (the namespace lives on in the returned descriptor).
// Everything it mounts is in that thread's new namespace, so a failure
// leaves nothing behind on the host.
func newTemplate(o Options, scratch string) (*os.File, error) {
	if err := templateOK(o); err != nil {
		return nil, err
	}
	type result struct {
		ns  *os.File
		err error
	}
	done := make(chan result, 1)
	var run func(started chan struct{})
	run = func(started chan struct{}) {
		runtime.LockOSThread() // never unlocked: the thread ends with its namespace
		if unix.Gettid() == unix.Getpid() {
			// The main thread must stay in the host namespace (/proc/self is
			// its view): hold it until another thread has taken the job.
			next := make(chan struct{})
			go run(next)
			<-next
			runtime.UnlockOSThread()
			return
		}
		if started != nil {
			close(started)
		}
		ns, err := buildTemplate(o, scratch)
		done <- result{ns, err}
	}
	go run(nil)
	r := <-done
	return r.ns, r.err
}

// buildTemplate makes the calling (locked) thread's new mount namespace the
// template, with root on a tmpfs mounted at scratch, and returns it.
func buildTemplate(o Options, scratch string) (*os.File, error) {
	if err := unix.Unshare(unix.CLONE_FS | unix.CLONE_NEWNS); err != nil {
		return nil, fmt.Errorf("unshare: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("make / private: %w", err)
	}
	const opts = "mode=0755,size=64k,nr_inodes=4096"
	if err := unix.Mount("codexec-template", scratch, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return nil, fmt.Errorf("template tmpfs: %w", err)
	}
	if err := fillTemplate(scratch, o); err != nil {
		return nil, err
	}
	if err := enterTemplate(scratch); err != nil {
		return nil, err
	}
	return os.Open("/proc/thread-self/ns/mnt")
}

// fillTemplate creates the template's tree under root (see above).
func fillTemplate(root string, o Options) error {
	for _, d := range []string{"/usr", "/etc", "/proc", "/dev", "/tmp", "/.old", pointsDir} {
		if err := os.Mkdir(root+d, 0o755); err != nil {
			return err
		}
	}
	if err := roBind(root, "/usr", true); err != nil {
		return err
	}
	for _, l := range rootLinks {
		if err := templateLink(root, l); err != nil {
			return err
		}
	}
	for _, f := range append(append([]string{}, etcFiles...), fontCache) {
		if err := roBindTry(root, f); err != nil {
			return err
		}
	}
	if err := os.WriteFile(root+"/etc/passwd", nil, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(root+"/etc/group", []byte(groupData(o.GID)), 0o644); err != nil {
		return err
	}
	if !o.NoLandlock {
		if err := bindAt(root, o.Exe, landlockInitPath); err != nil {
			return err
		}
	}
	for k := range templatePoints {
		if err := os.Mkdir(root+pointPath(true, k), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(root+pointPath(false, k), nil, 0o644); err != nil {
			return err
		}
	}
	if err := unix.Mount("proc", root+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("template /proc: %w", err)
	}
	// Not read-only: bwrap binds /dev/null and the like from it for --dev.
	if err := unix.Mount("/dev", root+"/dev", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("template /dev: %w", err)
	}
	return nil
}

// enterTemplate makes root the namespace's root, drops the host's mounts
// and makes the root file system read-only.
func enterTemplate(root string) error {
	if err := unix.PivotRoot(root, root+"/.old"); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Unmount("/.old", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's mounts: %w", err)
	}
	if err := unix.Rmdir("/.old"); err != nil {
		return err
	}
	return unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
}

// pointPath is the template's K-th directory or file mount point.
func pointPath(dir bool, k int) string {
	if dir {
		return pointsDir + "/d" + strconv.Itoa(k)
	}
	return pointsDir + "/f" + strconv.Itoa(k)
}

// templateLink copies the host's top-level link (or directory) l.
func templateLink(root, l string) error {
	fi, err := os.Lstat(l)
	switch {
	case err != nil:
		return nil
	case fi.Mode()&os.ModeSymlink != 0:
		t, err := os.Readlink(l)
		if err != nil {
			return err
		}
		return os.Symlink(t, root+l)
	case fi.IsDir():
		if err := os.Mkdir(root+l, 0o755); err != nil {
			return err
		}
		return roBind(root, l, true)
	}
	return nil
}

// roBindTry binds host path p read-only at the same path under root if it
// exists.
func roBindTry(root, p string) error {
	if _, err := os.Stat(p); err != nil {
		return nil
	}
	return bindAt(root, p, p)
}

// bindAt binds host path src read-only at dest under root, creating dest
// (and its parents).
func bindAt(root, src, dest string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(root+dest), 0o755); err != nil {
		return err
	}
	if fi.IsDir() {
		err = os.Mkdir(root+dest, 0o755)
	} else {
		err = os.WriteFile(root+dest, nil, 0o644)
	}
	if err != nil {
		return err
	}
	if err := unix.Mount(src, root+dest, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("template %s: %w", dest, err)
	}
	return readOnly(root + dest)
}

// roBind binds host p at p under root, read-only; rec includes its
// submounts.
func roBind(root, p string, rec bool) error {
	flags := uintptr(unix.MS_BIND)
	if rec {
		flags |= unix.MS_REC
	}
	if err := unix.Mount(p, root+p, "", flags, ""); err != nil {
		return fmt.Errorf("template %s: %w", p, err)
	}
	return readOnly(root + p)
}

// readOnly makes the mounts at p and below read-only, nosuid and nodev.
func readOnly(p string) error {
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(unix.AT_FDCWD, p, unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("read-only %s: %w", p, err)
	}
	return nil
}
