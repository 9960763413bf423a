//go:build linux

package idmap

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

// ErrUnsupported wraps why the kernel or the directory's file system
// refused an idmapped mount.
var ErrUnsupported = errors.New("idmapped mounts are not possible here")

// Mapper makes idmapped clones for the sandbox user uid:gid (New).
type Mapper struct {
	exe      string
	uid, gid int
	mu       sync.Mutex
	ns       map[sandbox.Owner]*os.File
}

// New returns a Mapper that maps owners onto the sandbox user uid:gid,
// starting exe (a binary that dispatches helper.HoldCommand) to make each
// owner's user namespace.
func New(exe string, uid, gid int) *Mapper {
	return &Mapper{exe: exe, uid: uid, gid: gid, ns: map[sandbox.Owner]*os.File{}}
}

// Clone returns a detached, idmapped clone of the directory dir (without
// its submounts, like a plain bind), nosuid and nodev, read-only if ro;
// the caller attaches it with move_mount and closes it. An error wrapping
// ErrUnsupported means the file system or kernel cannot map it.
func (m *Mapper) Clone(dir string, o sandbox.Owner, ro bool) (*os.File, error) {
	ns, err := m.userns(o)
	if err != nil {
		return nil, err
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("open_tree %s: %w", dir, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Userns_fd: uint64(ns.Fd())}
	if ro {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: idmapping %s: %v", ErrUnsupported, dir, err)
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// Close releases the cached user namespaces.
func (m *Mapper) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for o, f := range m.ns {
		_ = f.Close()
		delete(m.ns, o)
	}
}

// userns returns o's user namespace, making it on first use.
func (m *Mapper) userns(o sandbox.Owner) (*os.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.ns[o]; f != nil {
		return f, nil
	}
	f, err := makeUserns(m.exe, o, m.uid, m.gid)
	if err != nil {
		return nil, err
	}
	m.ns[o] = f
	return f, nil
}

// makeUserns starts a helper child in a new user namespace whose maps are
// "OWNER SANDBOX 1" (setgroups denied), opens the namespace and lets the
// child go: the descriptor keeps the namespace alive.
func makeUserns(exe string, o sandbox.Owner, uid, gid int) (_ *os.File, retErr error) {
	cmd := exec.Command(exe, helper.HoldCommand)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: o.UID, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: o.GID, HostID: gid, Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: a user namespace for uid %d: %v", ErrUnsupported, o.UID, err)
	}
	defer func() {
		_ = in.Close()
		if err := cmd.Wait(); err != nil && retErr == nil {
			retErr = fmt.Errorf("user namespace helper: %w", err)
		}
	}()
	f, err := os.Open("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/user")
	if err != nil {
		return nil, fmt.Errorf("open user namespace: %w", err)
	}
	defer func() {
		if retErr != nil {
			_ = f.Close()
		}
	}()
	return f, nil
}
