//go:build linux

package namespace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/warm"
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

// bindWorkspace makes spec's Dir the runner's workspace (with its owner's
// rights if spec.DirOwner).
func (n *Backend) bindWorkspace(r *nsRunner, spec sandbox.Spec, ro bool) error {
	dir := spec.Dir
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || filepath.Dir(dir) == "/" || dir == "/tmp" {
		return errWarmPlace
	}
	tree, err := n.cloneWorkspace(spec, ro)
	if err != nil {
		return err
	}
	defer unix.Close(tree)
	masks := sandbox.MasksBelow(n.opts.Mask, dir, dir, n.reachUID(spec))
	passwd := passwdData(n.opts.UID, n.opts.GID, dir)
	return warm.InMountNS(r.mntns, func() error {
		// Inodes created in the sandbox's file systems must belong to an id
		// its user namespace maps: the sandbox user's. Mounting needs
		// CAP_SYS_ADMIN, which a changed fsuid keeps.
		_ = unix.Setfsgid(n.hostGID)
		_ = unix.Setfsuid(n.hostUID)
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
			if err := warm.ApplyMask(m); err != nil {
				return err
			}
		}
		return replaceFile("/etc/passwd", passwd, scratch)
	})
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

// replaceFile puts a read-only file with data over path (inside the
// sandbox's mount namespace).
func replaceFile(path, data, scratch string) error {
	src := filepath.Join(scratch, ".codexec-"+filepath.Base(path))
	if err := writeNew(src, data); err != nil {
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

// writeNew writes data to the file path, created or truncated, mode 0644
// (less the umask) — with plain system calls: os.WriteFile would register
// the file with the runtime's poller and unregister it, five system calls
// more on every warm run.
func writeNew(path, data string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	n, err := unix.Write(fd, []byte(data))
	if err == nil && n < len(data) {
		err = io.ErrShortWrite
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}
