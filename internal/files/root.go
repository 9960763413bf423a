// Package files moves files in and out of workspaces and keeps them beyond a
// run. It owns three things:
//
//   - Root: confined access beneath a workspace directory. Sandboxed code
//     controls everything inside a workspace and can plant symlinks, FIFOs or
//     swap directories while the server reads; every open therefore goes
//     through openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
//     RESOLVE_NO_MAGICLINKS relative to a directory fd, so no path — however
//     it was crafted or raced — resolves outside the root or through a link.
//     Only regular files are read (after fstat of the opened fd, opened
//     O_NONBLOCK so a FIFO never blocks); writes are atomic (temp file +
//     rename in the same directory fd).
//   - Store: files kept after their workspace is gone — a one-shot run's
//     artifacts and uploads staged for the next run — with an owner
//     (tenant), a TTL and a byte budget. Store is an interface so a shared
//     store can replace the local DirStore when codexec scales out.
//   - the python support module (codexec_mpl) that turns matplotlib's show()
//     into PNG files the server returns as images.
package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/confine"
	"github.com/codexec/codexec/internal/errcode"
)

// Errors callers can test with errors.Is.
var (
	ErrNotFound = errcode.New(errcode.FileNotFound, "no such file")
	ErrExists   = errcode.New(errcode.FileExists, "file exists (pass overwrite: true to replace it)")
	ErrTooLarge = errcode.New(errcode.LimitExceeded, "too large")
	// ErrOffset is an appended chunk whose offset is not the file's size.
	ErrOffset = errcode.New(errcode.InvalidParams, "offset is not the end of the file")
)

// Root is a workspace directory opened for confined access. It holds an fd to
// the directory; all paths are relative to it. Safe for concurrent use.
// Close releases the fd.
type Root struct {
	fd       int
	dir      string
	uid, gid int
	// as is whose rights every operation beneath the root runs with (the
	// zero Identity: the server's own).
	as confine.Identity
	// readOnly refuses writes (a caller's directory the sandbox may not
	// write).
	readOnly bool
	// hidden are paths beneath the root (Clean form) that do not exist
	// for it: what the sandbox has masked there (Hide).
	hidden []string
}

// OpenRoot opens dir (which must be a real directory, not a symlink). Files
// and directories created through the Root take dir's owner, so code in the
// sandbox (which runs as that owner) can change what was uploaded.
func OpenRoot(dir string) (*Root, error) {
	fd, err := unix.Open(dir, openPath|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	return &Root{fd: fd, dir: dir, uid: int(st.Uid), gid: int(st.Gid)}, nil
}

// OpenWorkspace opens a run's or session's workspace dir for the server to
// act on for the sandbox: every lookup, read, listing and write beneath it
// runs with as's rights (see internal/confine), so nothing the sandbox user
// could not read is read, and nothing it could not write is written.
// Without writable, writes are refused outright (a caller's directory the
// sandbox has read-only). The directory itself is opened with the server's
// rights: its path was checked by the caller, and the sandbox reaches it
// through a mount even when it could not traverse its parents.
func OpenWorkspace(dir string, as confine.Identity, writable bool) (*Root, error) {
	r, err := OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	r.as, r.readOnly = as, !writable
	return r, nil
}

// within runs fn with the root's identity.
func within[T any](r *Root, fn func() (T, error)) (T, error) {
	var out T
	err := r.as.Do(func() error {
		var err error
		out, err = fn()
		return err
	})
	return out, err
}

// Hide makes the paths rels (relative to the root, Clean form) and
// everything beneath them not exist for every operation through r, as the
// sandbox masks them (forbidden paths and codexec's own state below a
// caller's directory). Call it before sharing r.
func (r *Root) Hide(rels ...string) { r.hidden = append(r.hidden, rels...) }

// isHidden reports whether rel is, or lies beneath, a hidden path.
func (r *Root) isHidden(rel string) bool {
	for _, h := range r.hidden {
		if rel == h || strings.HasPrefix(rel, h+"/") {
			return true
		}
	}
	return false
}

// clean is Clean, refusing hidden paths as not found.
func (r *Root) clean(p string) (string, error) {
	rel, err := Clean(p)
	if err == nil && r.isHidden(rel) {
		return "", fmt.Errorf("%s: %w", rel, ErrNotFound)
	}
	return rel, err
}

// Close releases the directory fd.
func (r *Root) Close() error { return unix.Close(r.fd) }

// Dir is the host path the root was opened at (for messages only; never
// used to open files).
func (r *Root) Dir() string { return r.dir }

// Clean validates a caller-supplied relative path and returns it in canonical
// slash form ("" for the root itself). Absolute paths, ".." components, NUL
// bytes and backslashes are refused: the path must name something beneath
// the root on its face, before any lookup.
func Clean(p string) (string, error) {
	switch {
	case strings.ContainsRune(p, 0):
		return "", errcode.New(errcode.InvalidParams, "path %q contains a NUL byte", p)
	case strings.HasPrefix(p, "/"):
		return "", errcode.New(errcode.InvalidParams, "path %q is absolute: give a path relative to the workspace", p)
	case strings.Contains(p, `\`):
		return "", errcode.New(errcode.InvalidParams, "path %q contains a backslash", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", errcode.New(errcode.InvalidParams, "path %q contains '..': paths must stay inside the workspace", p)
		}
	}
	c := path.Clean("/" + p)[1:]
	return c, nil
}

// explain turns lookup errors into messages an agent can act on.
func explain(rel string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%s: %w", rel, ErrNotFound)
	case errors.Is(err, unix.ELOOP):
		return errcode.New(errcode.NotAllowed, "%s: refused: the path is or goes through a symlink", rel)
	case errors.Is(err, unix.EXDEV):
		return errcode.New(errcode.NotAllowed, "%s: refused: the path leaves the workspace", rel)
	case errors.Is(err, unix.ENOTDIR):
		return errcode.New(errcode.InvalidParams, "%s: a parent is not a directory", rel)
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("%s: this kernel lacks openat2 (Linux ≥ 5.6 is required for file access)", rel)
	}
	return fmt.Errorf("%s: %w", rel, err)
}

// Entry describes one file beneath a root.
type Entry struct {
	Path  string    `json:"path"`
	Size  int64     `json:"size"`
	MTime time.Time `json:"mtime"`
	// Type is file, dir, symlink, fifo, socket, device or other.
	Type string `json:"type"`
	// Mode holds the permission bits (not serialised).
	Mode fs.FileMode `json:"-"`
}

func typeOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "dir"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "device"
	}
	return "other"
}

func entryOf(rel string, st *unix.Stat_t) Entry {
	return Entry{Path: rel, Size: st.Size, MTime: time.Unix(st.Mtim.Unix()).UTC(), Type: typeOf(uint32(st.Mode)),
		Mode: fs.FileMode(st.Mode & 0o777)}
}

// File is a regular file opened for reading beneath a root.
type File struct {
	*os.File
	Entry
}

// Open opens the regular file rel for reading. Symlinks anywhere on the path,
// directories, FIFOs, sockets, devices and files with several hard links
// (which could be another name for a file the sandbox could not otherwise
// reach) are refused before a byte is read.
func (r *Root) Open(p string) (*File, error) {
	return within(r, func() (*File, error) { return r.open(p) })
}

func (r *Root) open(p string) (*File, error) {
	rel, err := r.clean(p)
	if err != nil {
		return nil, err
	}
	return r.openRegular(rel, unix.O_RDONLY)
}

// openRegular opens the regular file rel with flags (O_RDONLY or
// O_WRONLY), refusing what Open refuses.
func (r *Root) openRegular(rel string, flags uint64) (*File, error) {
	// An O_PATH open first: it never opens the object itself, so a device or
	// FIFO is refused without side effects.
	pfd, err := r.openBeneath(rel, openPath|unix.O_NOFOLLOW)
	if err != nil {
		return nil, err
	}
	st, err := regular(pfd, rel)
	unix.Close(pfd)
	if err != nil {
		return nil, err
	}
	// The real open: O_NONBLOCK so an object swapped in meanwhile cannot
	// block us; re-checked on the fd we will actually use.
	fd, err := r.openBeneath(rel, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil, err
	}
	if st, err = regular(fd, rel); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &File{File: os.NewFile(uintptr(fd), rel), Entry: entryOf(rel, st)}, nil
}

// regular fstats fd and refuses anything but a singly linked regular file.
func regular(fd int, rel string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if t := typeOf(uint32(st.Mode)); t != "file" {
		return nil, errcode.New(errcode.NotAllowed, "%s: refused: it is a %s, not a regular file", rel, t)
	}
	if st.Nlink > 1 {
		return nil, errcode.New(errcode.NotAllowed, "%s: refused: the file has %d hard links", rel, st.Nlink)
	}
	return &st, nil
}

// Read returns length bytes of rel from offset (fewer at the end of the
// file). length ≤ 0 means "to the end, but at most max bytes" — the caller
// sees from the entry's Size whether more remains; an explicit length over
// max is refused with ErrTooLarge.
func (r *Root) Read(p string, offset, length, max int64) ([]byte, Entry, error) {
	f, err := r.Open(p)
	if err != nil {
		return nil, Entry{}, err
	}
	defer f.Close()
	if offset < 0 || offset > f.Size {
		return nil, f.Entry, errcode.New(errcode.InvalidParams, "offset %d is outside the file (size %d)", offset, f.Size)
	}
	if length > max {
		return nil, f.Entry, fmt.Errorf("%s: length %d exceeds the limit of %d bytes per read: %w", f.Path, length, max, ErrTooLarge)
	}
	n := min(f.Size-offset, max)
	if length > 0 {
		n = min(n, length)
	}
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, f.Entry, err
	}
	return buf[:got], f.Entry, nil
}

// Stat describes rel without following a final symlink (for listings).
func (r *Root) Stat(p string) (Entry, error) {
	return within(r, func() (Entry, error) { return r.stat(p) })
}

func (r *Root) stat(p string) (Entry, error) {
	rel, err := r.clean(p)
	if err != nil {
		return Entry{}, err
	}
	dir, base := path.Split(rel)
	dfd, err := r.openBeneath(strings.TrimSuffix(dir, "/"), openPath|unix.O_DIRECTORY)
	if err != nil {
		return Entry{}, err
	}
	defer unix.Close(dfd)
	if base == "" {
		base = "."
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Entry{}, explain(rel, err)
	}
	return entryOf(rel, &st), nil
}

// FileMode is the default mode of written files.
const FileMode fs.FileMode = 0o644
