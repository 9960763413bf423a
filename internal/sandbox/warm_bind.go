package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Binding a workspace into a started runner. The runner's sandbox was built
// with an empty, root-owned placeholder directory (warmDir) whose Landlock
// rule grants full access beneath it. At take time the server, on a
// dedicated OS thread that joins the runner's mount namespace:
//   - renames the placeholder to the workspace's parent directory (the inode,
//     and with it the Landlock rule, moves along) and creates the workspace
//     mount point inside it — or, for a workspace under /tmp, which the
//     Landlock domain already covers, creates the mount point in the
//     sandbox's private /tmp;
//   - attaches a clone of the host workspace there (open_tree + move_mount;
//     nosuid, nodev), exactly where a cold sandbox has it (its host path);
//   - masks forbidden paths below it as a cold sandbox does, and rewrites
//     /etc/passwd with the workspace as the sandbox user's home.
// A workspace whose place in the sandbox cannot be made this way (it would
// lie on another sandbox mount) is refused and the run starts cold.

// errWarmPlace means the workspace cannot be bound into a runner.
var errWarmPlace = errors.New("workspace cannot be placed in a warm runner")

// bindWorkspace makes dir the runner's workspace.
func (n *Namespace) bindWorkspace(r *nsRunner, dir string, ro bool) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || filepath.Dir(dir) == "/" || dir == "/tmp" {
		return errWarmPlace
	}
	tree, err := cloneTree(dir, ro)
	if err != nil {
		return err
	}
	defer unix.Close(tree)
	masks := masksBelow(n.opts.Mask, dir, dir, n.opts.UID)
	passwd := passwdData(n.opts.UID, n.opts.GID, dir)
	return inMountNS(r.mntns, func() error {
		// Inodes created in the sandbox's file systems must belong to an id
		// its user namespace maps: the sandbox user's. Mounting needs
		// CAP_SYS_ADMIN, which a changed fsuid keeps.
		_ = unix.Setfsgid(n.opts.GID)
		_ = unix.Setfsuid(n.opts.UID)
		place, scratch := placeWorkspace, filepath.Dir(warmDir)
		if r.forked {
			// A forked runner's /tmp and workspace root are its own tmpfs;
			// everything else it shares with its zygote and siblings.
			place, scratch = placeForked, filepath.Dir(dir)
		}
		if err := place(dir); err != nil {
			return err
		}
		if err := unix.MoveMount(tree, "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("move_mount %s: %w", dir, err)
		}
		for _, m := range masks {
			if err := m.apply(); err != nil {
				return err
			}
		}
		return replaceFile("/etc/passwd", passwd, scratch)
	})
}

// cloneTree returns a detached clone of the mount tree at dir (open_tree),
// nosuid and nodev (and read-only if ro), to be attached with move_mount;
// the caller closes it.
func cloneTree(dir string, ro bool) (int, error) {
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

// placeForked creates the mount point for dir in a forked runner's private
// /tmp or workspace root.
func placeForked(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return errWarmPlace
	}
	return nil
}

// placeWorkspace creates the mount point for dir in the sandbox (see above).
func placeWorkspace(dir string) error {
	if strings.HasPrefix(dir, "/tmp/") {
		_ = unix.Rmdir(warmDir)
		return os.MkdirAll(dir, 0o755)
	}
	parent := filepath.Dir(dir)
	if _, err := os.Lstat(parent); err == nil {
		return errWarmPlace // it exists in the sandbox: another mount's place
	}
	if err := os.MkdirAll(filepath.Dir(parent), 0o755); err != nil {
		return errWarmPlace
	}
	if err := os.Rename(warmDir, parent); err != nil {
		return errWarmPlace // e.g. EXDEV: the parent would lie on another mount
	}
	return os.Mkdir(dir, 0o755)
}

// mask hides one forbidden path below a workspace.
type mask struct {
	path string
	dir  bool
}

func (m mask) apply() error {
	var err error
	if m.dir {
		err = unix.Mount("tmpfs", m.path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0000,size=4k")
	} else {
		err = unix.Mount("/dev/null", m.path, "", unix.MS_BIND, "")
	}
	if err != nil {
		return fmt.Errorf("mask %s: %w", m.path, err)
	}
	return nil
}

// masksBelow lists the paths of list strictly below dir that the sandbox
// could reach (the same rule as bwrapArgs.workspace), as seen inside the
// sandbox where dir is mounted at target.
func masksBelow(list []string, dir, target string, uid int) []mask {
	var out []mask
	for _, m := range list {
		if m == dir || !strings.HasPrefix(m, dir+"/") || !sandboxCanReach(dir, m, uid) {
			continue
		}
		if fi, err := os.Stat(m); err == nil {
			out = append(out, mask{path: target + strings.TrimPrefix(m, dir), dir: fi.IsDir()})
		}
	}
	return out
}

// replaceFile puts a read-only file with data over path (inside the
// sandbox's mount namespace).
func replaceFile(path, data, scratch string) error {
	src := filepath.Join(scratch, ".codexec-"+filepath.Base(path))
	if err := os.WriteFile(src, []byte(data), 0o644); err != nil {
		return err
	}
	// bwrap's data binds are of unlinked files, which cannot be mounted
	// over: take the old one off first.
	_ = unix.Unmount(path, unix.MNT_DETACH)
	if err := unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", path, err)
	}
	_ = unix.Mount("", path, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
	return os.Remove(src)
}

// Work inside a runner's mount namespace is done by one dedicated OS thread
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

// inMountNS runs fn on the namespace worker thread while it is in the mount
// namespace ns.
func inMountNS(ns *os.File, fn func() error) error {
	nsWorker.once.Do(startNSWorker)
	if nsWorker.err != nil {
		return nsWorker.err
	}
	done := make(chan error, 1)
	nsWorker.jobs <- nsJob{ns: ns, fn: fn, done: done}
	return <-done
}

// hostMountNS returns the server's mount namespace as readlink shows it.
func hostMountNS() (string, error) {
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
