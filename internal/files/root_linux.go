package files

import "golang.org/x/sys/unix"

// resolve flags for every lookup beneath a root.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openPath opens a file as a location only (no read or write access), for
// directory fds and fstat.
const openPath = unix.O_PATH

// openBeneath opens rel (already Clean) beneath the root with flags.
func (r *Root) openBeneath(rel string, flags uint64) (int, error) {
	if r.isHidden(rel) {
		return -1, explain(rel, unix.ENOENT)
	}
	if rel == "" {
		rel = "."
	}
	how := &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: resolveFlags}
	for {
		fd, err := unix.Openat2(r.fd, rel, how)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, explain(rel, err)
	}
}

// renameAt renames from to to within the directory dfd; unless overwrite,
// an existing to fails with EEXIST, atomically (no check-then-rename race).
func renameAt(dfd int, from, to string, overwrite bool) error {
	flags := uint(unix.RENAME_NOREPLACE)
	if overwrite {
		flags = 0
	}
	return unix.Renameat2(dfd, from, dfd, to, flags)
}
