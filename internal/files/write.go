package files

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/errcode"
)

// WriteOptions control Write. The zero value writes mode 0644, refuses to
// replace an existing file and sets no size limit.
type WriteOptions struct {
	Mode      fs.FileMode
	Overwrite bool
	// Max is the largest number of bytes accepted (0 = no limit); a longer
	// stream is refused and nothing is written.
	Max int64
}

// Written describes a file Write created.
type Written struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Write stores the contents of src at rel atomically: missing parent
// directories are created (each beneath the root, never through a link), the
// data goes to a temporary file in the target directory, and a rename puts
// it in place — readers see the old file or the new one, never a partial
// one. Without Overwrite an existing name is refused (the rename itself
// refuses, so there is no check-then-act race); with it, a file or symlink
// of that name is replaced (the link itself, never its target), a directory
// never is.
func (r *Root) Write(p string, src io.Reader, o WriteOptions) (Written, error) {
	if r.readOnly {
		return Written{}, errcode.New(errcode.NotAllowed, "%s is read-only to sandboxed code, so nothing is written there; an operator can make it writable with CODEXEC_WRITABLE_ROOTS", r.dir)
	}
	return within(r, func() (Written, error) { return r.write(p, src, o) })
}

func (r *Root) write(p string, src io.Reader, o WriteOptions) (Written, error) {
	rel, err := r.clean(p)
	if err != nil {
		return Written{}, err
	}
	if rel == "" {
		return Written{}, errcode.New(errcode.InvalidParams, "path names the workspace itself; give a file name")
	}
	dir, base := path.Split(rel)
	dfd, err := r.mkdirAll(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return Written{}, err
	}
	defer unix.Close(dfd)
	tmp := ".codexec-upload-" + rand.Text()[:12]
	w, err := r.writeTemp(dfd, tmp, src, o)
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return Written{}, err
	}
	w.Path = rel
	if err := renameAt(dfd, tmp, base, o.Overwrite); err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		if errors.Is(err, unix.EEXIST) {
			return Written{}, fmt.Errorf("%s: %w", rel, ErrExists)
		}
		return Written{}, explain(rel, err)
	}
	return w, nil
}

// writeTemp creates name in dfd exclusively and copies src into it.
func (r *Root) writeTemp(dfd int, name string, src io.Reader, o WriteOptions) (Written, error) {
	mode := o.Mode.Perm()
	if mode == 0 {
		mode = FileMode
	}
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode))
	if err != nil {
		return Written{}, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	// The umask may have narrowed the mode; and the file must belong to the
	// workspace's owner so the sandboxed program can change it.
	if err := f.Chmod(mode); err != nil {
		return Written{}, err
	}
	_ = f.Chown(r.uid, r.gid)
	h := sha256.New()
	if o.Max > 0 {
		src = io.LimitReader(src, o.Max+1)
	}
	n, err := io.Copy(io.MultiWriter(f, h), src)
	if err != nil {
		return Written{}, err
	}
	if o.Max > 0 && n > o.Max {
		return Written{}, fmt.Errorf("more than %d bytes: %w", o.Max, ErrTooLarge)
	}
	return Written{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, f.Close()
}

// mkdirAll returns an O_PATH fd of directory rel, creating missing
// components one at a time beneath the root with the root's owner.
func (r *Root) mkdirAll(rel string) (int, error) {
	if rel == "" {
		return r.openBeneath("", openPath|unix.O_DIRECTORY)
	}
	fd, err := r.openBeneath(rel, openPath|unix.O_DIRECTORY)
	if !errors.Is(err, ErrNotFound) {
		return fd, err
	}
	parent, base := path.Split(rel)
	pfd, err := r.mkdirAll(strings.TrimSuffix(parent, "/"))
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	if err := unix.Mkdirat(pfd, base, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, explain(rel, err)
	}
	_ = unix.Fchownat(pfd, base, r.uid, r.gid, unix.AT_SYMLINK_NOFOLLOW)
	return r.openBeneath(rel, openPath|unix.O_DIRECTORY)
}

// Append writes the contents of src into the existing regular file rel at
// offset, which must be the file's size: the next chunk of a file sent in
// chunks, written in place (readers may see the file grow). Max bounds the
// file's size after the chunk (0 = no limit). A chunk that fails — a read
// error of src, a file that would pass Max — is cut off again, leaving the
// file as it was. The result's Size is the file's new size; its SHA256 is
// empty, since hashing the whole file per chunk would cost as much again
// as the chunks.
func (r *Root) Append(p string, src io.Reader, offset, max int64) (Written, error) {
	if r.readOnly {
		return Written{}, errcode.New(errcode.NotAllowed, "%s is read-only to sandboxed code, so nothing is written there; an operator can make it writable with CODEXEC_WRITABLE_ROOTS", r.dir)
	}
	return within(r, func() (Written, error) { return r.append(p, src, offset, max) })
}

func (r *Root) append(p string, src io.Reader, offset, max int64) (_ Written, retErr error) {
	rel, err := r.clean(p)
	if err != nil {
		return Written{}, err
	}
	f, err := r.openRegular(rel, unix.O_WRONLY)
	if err != nil {
		return Written{}, err
	}
	defer f.Close()
	if f.Size != offset {
		return Written{}, fmt.Errorf("%s holds %d bytes, so the next chunk goes at offset %d, not %d: %w", rel, f.Size, f.Size, offset, ErrOffset)
	}
	defer func() {
		if retErr != nil {
			_ = f.Truncate(offset) // the failed chunk's bytes
		}
	}()
	if max > 0 {
		if offset >= max {
			return Written{}, fmt.Errorf("%s: more than %d bytes: %w", rel, max, ErrTooLarge)
		}
		src = io.LimitReader(src, max-offset+1)
	}
	n, err := io.Copy(io.NewOffsetWriter(f, offset), src)
	if err != nil {
		return Written{}, err
	}
	if max > 0 && offset+n > max {
		return Written{}, fmt.Errorf("%s: more than %d bytes: %w", rel, max, ErrTooLarge)
	}
	return Written{Path: rel, Size: offset + n}, f.Close()
}
