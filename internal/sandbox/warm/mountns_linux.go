package warm

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/sandbox"
)

// CloneTree returns a detached clone of the mount tree at dir (open_tree),
// nosuid and nodev (and read-only if ro), to be attached with move_mount;
// the caller closes it.
func CloneTree(dir string, ro bool) (int, error) {
	tree, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return -1, fmt.Errorf("open_tree %s: %w", dir, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if ro {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(tree)
		return -1, fmt.Errorf("mount_setattr: %w", err)
	}
	return tree, nil
}

// ApplyMask hides m in the current mount namespace (an empty read-only
// tmpfs over a directory, /dev/null over a file).
func ApplyMask(m sandbox.Mask) error {
	var err error
	if m.Dir {
		err = unix.Mount("tmpfs", m.Path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0000,size=4k")
	} else {
		err = unix.Mount("/dev/null", m.Path, "", unix.MS_BIND, "")
	}
	if err != nil {
		return fmt.Errorf("mask %s: %w", m.Path, err)
	}
	return nil
}

// Work inside a runner's mount namespace (binding its workspace at take
// time, in namespace and docker mode) is done by one dedicated OS thread
// that joins the namespace, runs the job and returns to the server's own
// namespace. It is locked for good and never exits: threads must not exit,
// because a child's parent-death signal follows the thread that started it,
// and Go terminates locked threads whose goroutine returns.
type nsJob struct {
	ns   *os.File
	fn   func() error
	done chan error
}

var nsWorker struct {
	once sync.Once
	jobs chan nsJob
	// host is the server's mount namespace (readlink form) and hostFd an
	// open descriptor of it.
	host   string
	hostFd *os.File
	err    error
}

// InMountNS runs fn on the namespace worker thread while it is in the mount
// namespace ns.
func InMountNS(ns *os.File, fn func() error) error {
	nsWorker.once.Do(startNSWorker)
	if nsWorker.err != nil {
		return nsWorker.err
	}
	done := make(chan error, 1)
	nsWorker.jobs <- nsJob{ns: ns, fn: fn, done: done}
	return <-done
}

// HostMountNS returns the server's mount namespace as readlink shows it.
func HostMountNS() (string, error) {
	nsWorker.once.Do(startNSWorker)
	return nsWorker.host, nsWorker.err
}

func startNSWorker() {
	nsWorker.jobs = make(chan nsJob)
	ready := make(chan struct{})
	go nsWorkerMain(ready)
	<-ready
}

func nsWorkerMain(ready chan struct{}) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// Not the main thread: while it is in a sandbox's namespace, the
		// process's /proc/self would show the sandbox. Occupy it while
		// another thread becomes the worker.
		inner := make(chan struct{})
		go nsWorkerMain(inner)
		<-inner
		runtime.UnlockOSThread()
		close(ready)
		return
	}
	nsWorker.err = nsWorkerSetup()
	close(ready)
	if nsWorker.err != nil {
		select {} // keep the thread (see nsJob)
	}
	for j := range nsWorker.jobs {
		j.done <- nsWorkerRun(j)
	}
}

func nsWorkerSetup() error {
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("unshare fs: %w", err)
	}
	self := "/proc/thread-self/ns/mnt"
	host, err := os.Readlink(self)
	if err != nil {
		return err
	}
	f, err := os.Open(self)
	if err != nil {
		return err
	}
	nsWorker.host, nsWorker.hostFd = host, f
	return nil
}

// nsWorkerRun runs one job and returns to the server's namespace with the
// server's credentials; if it cannot, the worker stops for good.
func nsWorkerRun(j nsJob) error {
	if err := unix.Setns(int(j.ns.Fd()), unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("setns: %w", err)
	}
	err := j.fn()
	_ = unix.Setfsuid(0)
	_ = unix.Setfsgid(0)
	if berr := unix.Setns(int(nsWorker.hostFd.Fd()), unix.CLONE_NEWNS); berr != nil {
		slog.Error("sandbox namespace worker cannot return to the server's namespace; warm runners disabled", "err", berr)
		nsWorker.err = berr // read only by new callers after this job's done
		j.done <- errors.Join(err, berr)
		select {}
	}
	return err
}
