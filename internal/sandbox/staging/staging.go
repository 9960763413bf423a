//go:build linux

package staging

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/sandbox/mounttemplate"
)

// Without the template namespace (where a run's sources are
// detached clones its launcher mounts instead): bwrap runs as the
// unprivileged sandbox uid, so it can only bind host directories it can
// reach by path; a workspace below /root (mode 0700) or a
// 0700 temp dir is out of its reach, and bwrap refuses descriptors it cannot
// resolve. The server (root) therefore bind-mounts each source onto a
// per-run mount point under a private, traversable staging directory, hands
// bwrap those paths, and unmounts them when the run ends. Nothing of the
// user's permissions is changed.

// The staging root is shared by every backend of the process and
// reference-counted: Acquire when a backend starts, Release when it closes;
// the last release removes it.
var staging struct {
	sync.Mutex
	root string
	refs int
}

// Acquire creates /run/codexec-<pid> (if needed) as a private
// tmpfs, so staging mounts never propagate to other mount namespaces. Its
// own tmpfs, not a directory of whatever holds /run: every run makes and
// removes a few staging directories and mount points, which on a disk file
// system (ext4, where some hosts keep /run) cost ~1 ms of CPU per run in
// inode allocation and truncation; on tmpfs they are memory only.
func Acquire() error {
	staging.Lock()
	defer staging.Unlock()
	if staging.refs > 0 {
		staging.refs++
		return nil
	}
	dir, err := makeRoot()
	if err != nil {
		return err
	}
	// Empty directories and files only (mount points): nr_inodes bounds it.
	const opts = "mode=0711,size=1m,nr_inodes=1048576"
	if err := unix.Mount("codexec-staging", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("mount staging tmpfs on %s: %w", dir, err)
	}
	if err := unix.Mount("", dir, "", unix.MS_PRIVATE, ""); err != nil {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
		return fmt.Errorf("make %s private: %w", dir, err)
	}
	staging.root, staging.refs = dir, 1
	return nil
}

// rootParents are where a staging root may be made, first usable first:
// /run, or where a server without root (package rootless) can write, the
// temp directory. Either way the root is a tmpfs mounted in the server's
// own mount namespace.
var rootParents = []string{"/run/codexec-", filepath.Join(os.TempDir(), "codexec-staging-")}

// makeRoot makes this server's staging root directory, mode 0711.
func makeRoot() (string, error) {
	var errs []error
	for _, p := range rootParents {
		dir := p + strconv.Itoa(os.Getpid())
		err := os.MkdirAll(dir, 0o711)
		if err == nil {
			err = ownDir(dir)
		}
		if err == nil {
			err = os.Chmod(dir, 0o711)
		}
		if err == nil {
			return dir, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

// ownDir refuses a staging root that is not a real directory of this
// server's user: in the shared temp directory another account could have
// made the name first, or a link there.
func ownDir(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is not a directory of uid %d (made by another account?)", dir, os.Geteuid())
	}
	return nil
}

// Release drops a reference taken by Acquire; the last one unmounts and
// removes the staging root.
func Release() {
	staging.Lock()
	defer staging.Unlock()
	if staging.refs--; staging.refs == 0 {
		removeRoot(staging.root)
		staging.root = ""
	}
}

// Root is the staging root's path while a reference is held (Acquire); a
// scratch directory only the server can reach.
func Root() (string, error) {
	staging.Lock()
	defer staging.Unlock()
	if staging.root == "" {
		return "", errors.New("no staging root (backend closed?)")
	}
	return staging.root, nil
}

// Sweep unmounts and removes staging roots of codexec servers that are
// gone (/run/codexec-<pid>, or in the temp directory).
func Sweep() {
	for _, p := range rootParents {
		sweepUnder(p)
	}
}

// sweepUnder removes the staging roots named prefix+pid of servers that
// are gone.
func sweepUnder(prefix string) {
	roots, _ := filepath.Glob(prefix + "*")
	for _, r := range roots {
		pid, err := strconv.Atoi(strings.TrimPrefix(r, prefix))
		if err != nil || pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		removeRoot(r)
	}
}

// removeRoot detaches every mount below root and root itself, then
// removes the directories.
func removeRoot(root string) {
	runs, _ := os.ReadDir(root)
	for _, run := range runs {
		points, _ := os.ReadDir(filepath.Join(root, run.Name()))
		for _, p := range points {
			pp := filepath.Join(root, run.Name(), p.Name())
			_ = unix.Unmount(pp, unix.MNT_DETACH)
			_ = os.Remove(pp)
		}
		_ = os.Remove(filepath.Join(root, run.Name()))
	}
	_ = unix.Unmount(root, unix.MNT_DETACH)
	_ = os.Remove(root)
}

// Stage holds one run's staging mounts, or in template mode the detached
// clones of its sources that its launcher mounts.
type Stage struct {
	dir    string
	points []string
	// tmpl: trees are open_tree clones to move onto template points; dirs
	// and files count the points used.
	tmpl        bool
	trees       []Tree
	dirs, files int
}

// Tree is a detached clone of a run's source (F, the caller's to close
// once handed over) and the template point it goes on (Dest).
type Tree struct {
	F    *os.File
	Dest string
}

// ErrNoTemplatePoint means a run needs more mount points than the
// template namespace has.
var ErrNoTemplatePoint = mounttemplate.ErrFull

// New starts a run's stage named name: a staging directory, or, for a run
// started from the template namespace (template), nothing yet.
func New(name string, template bool) (*Stage, error) {
	if template {
		return &Stage{tmpl: true}, nil
	}
	r, err := Root()
	if err != nil {
		return nil, fmt.Errorf("sandbox: staging directory: %w", err)
	}
	dir := filepath.Join(r, name)
	if err := os.Mkdir(dir, 0o711); err != nil {
		return nil, fmt.Errorf("sandbox: staging directory: %w", err)
	}
	return &Stage{dir: dir}, nil
}

// Bind mounts src (a directory or file) on a fresh point in the stage and
// returns that point's path; in template mode it clones src and returns the
// template point it is to go on (see TakeTrees).
func (s *Stage) Bind(src string) (string, error) {
	if s.tmpl {
		return s.clone(src)
	}
	fi, err := os.Stat(src)
	if err != nil {
		return "", err
	}
	p := filepath.Join(s.dir, strconv.Itoa(len(s.points)))
	if fi.IsDir() {
		err = os.Mkdir(p, 0o700)
	} else {
		err = os.WriteFile(p, nil, 0o600)
	}
	if err != nil {
		return "", err
	}
	if err := unix.Mount(src, p, "", unix.MS_BIND, ""); err != nil {
		_ = os.Remove(p)
		return "", fmt.Errorf("bind %s: %w", src, err)
	}
	s.points = append(s.points, p)
	return p, nil
}

// clone makes a detached copy of the mount at src (not its submounts, like
// a plain bind) and returns the template point its launcher will put it on.
func (s *Stage) clone(src string) (string, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return "", fmt.Errorf("open_tree %s: %w", src, err)
	}
	return s.point(os.NewFile(uintptr(fd), src))
}

// Attach takes a detached mount tree f the caller made (an idmapped clone,
// package idmap; f becomes the stage's) and returns where the run sees it:
// a staging point it is moved onto, or in template mode the template
// point its launcher will move it onto.
func (s *Stage) Attach(f *os.File) (string, error) {
	if s.tmpl {
		return s.point(f)
	}
	defer f.Close()
	p := filepath.Join(s.dir, strconv.Itoa(len(s.points)))
	if err := os.Mkdir(p, 0o700); err != nil {
		return "", err
	}
	if err := unix.MoveMount(int(f.Fd()), "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		_ = os.Remove(p)
		return "", fmt.Errorf("move_mount %s: %w", f.Name(), err)
	}
	s.points = append(s.points, p)
	return p, nil
}

// point assigns the detached tree f the next template point of its kind.
func (s *Stage) point(f *os.File) (string, error) {
	fi, err := f.Stat() // what was cloned, not what its source names now
	if err != nil {
		_ = f.Close()
		return "", err
	}
	n := &s.files
	if fi.IsDir() {
		n = &s.dirs
	}
	if *n >= mounttemplate.Points {
		_ = f.Close()
		return "", ErrNoTemplatePoint
	}
	dest := mounttemplate.Point(fi.IsDir(), *n)
	*n++
	s.trees = append(s.trees, Tree{F: f, Dest: dest})
	return dest, nil
}

// TakeTrees hands over the clones made so far (their descriptors become
// the caller's).
func (s *Stage) TakeTrees() []Tree {
	t := s.trees
	s.trees = nil
	return t
}

// Release unmounts every point and removes the stage (in template mode:
// closes the clones not handed over). A nil Stage releases nothing.
func (s *Stage) Release() error {
	if s == nil {
		return nil
	}
	if s.tmpl {
		for _, t := range s.TakeTrees() {
			_ = t.F.Close()
		}
		return nil
	}
	var errs []error
	for _, p := range s.points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
			errs = append(errs, err)
		}
		_ = os.Remove(p)
	}
	if err := os.Remove(s.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
