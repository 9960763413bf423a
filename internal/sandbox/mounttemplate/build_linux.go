//go:build linux

package mounttemplate

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// newTemplate builds the template namespace on a thread of its own, which
// exits afterwards (the namespace lives on in the returned descriptor).
// Everything it mounts is in that thread's new namespace, so a failure
// leaves nothing behind on the host.
func newTemplate(c Config) (*os.File, error) {
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
		ns, err := buildTemplate(c)
		done <- result{ns, err}
	}
	go run(nil)
	r := <-done
	return r.ns, r.err
}

// buildTemplate makes the calling (locked) thread's new mount namespace the
// template, with root on a tmpfs mounted at c.Scratch, and returns it.
func buildTemplate(c Config) (*os.File, error) {
	scratch := c.Scratch
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
	if err := fillTemplate(scratch, c); err != nil {
		return nil, err
	}
	if err := enterTemplate(scratch); err != nil {
		return nil, err
	}
	return os.Open("/proc/thread-self/ns/mnt")
}

// fillTemplate creates the template's tree under root (see the package
// comment).
func fillTemplate(root string, c Config) error {
	for _, d := range []string{"/proc", "/dev", "/tmp", "/.old", pointsDir} {
		if err := os.Mkdir(root+d, 0o755); err != nil {
			return err
		}
	}
	for _, d := range c.Dirs {
		if err := bindAt(root, d, d); err != nil {
			return err
		}
	}
	for _, l := range c.Links {
		if err := templateLink(root, l); err != nil {
			return err
		}
	}
	for _, f := range c.Files {
		if err := roBindTry(root, f); err != nil {
			return err
		}
	}
	for _, f := range c.Write {
		if err := os.MkdirAll(filepath.Dir(root+f.Path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(root+f.Path, f.Data, 0o644); err != nil {
			return err
		}
	}
	if c.Helper != "" {
		if err := bindAt(root, c.Helper, c.HelperAt); err != nil {
			return err
		}
	}
	return fillSystem(root)
}

// fillSystem adds the mount points, /proc and /dev.
func fillSystem(root string) error {
	for k := range Points {
		if err := os.Mkdir(root+Point(true, k), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(root+Point(false, k), nil, 0o644); err != nil {
			return err
		}
	}
	if err := unix.Mount("proc", root+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		// A server without root (package rootless) may not mount a proc
		// of the host's pid namespace, only bind it. bwrap reads its own
		// entries there; sandboxes get a fresh /proc of their own.
		if berr := unix.Mount("/proc", root+"/proc", "", unix.MS_BIND|unix.MS_REC, ""); berr != nil {
			return fmt.Errorf("template /proc: %w (bind: %v)", err, berr)
		}
	}
	// Not read-only: bwrap binds /dev/null and the like from it for --dev.
	if err := unix.Mount("/dev", root+"/dev", "", unix.MS_BIND, ""); err != nil {
		// Without root, /dev's own mounts (pts, shm) are locked to it: only
		// the whole tree may be bound.
		if berr := unix.Mount("/dev", root+"/dev", "", unix.MS_BIND|unix.MS_REC, ""); berr != nil {
			return fmt.Errorf("template /dev: %w (recursive bind: %v)", err, berr)
		}
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
		return roBind(root, l)
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

// roBind binds host p (and its submounts) at p under root, read-only.
func roBind(root, p string) error {
	if err := unix.Mount(p, root+p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
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
