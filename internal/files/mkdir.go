package files

import (
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/errcode"
)

// Mkdir creates directory p and its missing parents beneath the root (each
// beneath its parent's fd, never through a link, with the root's identity
// and owner), then sets p's permission bits to mode (0: 0755). An existing
// directory is kept and gets mode.
func (r *Root) Mkdir(p string, mode fs.FileMode) error {
	if r.readOnly {
		return errcode.New(errcode.NotAllowed, "%s is read-only to sandboxed code", r.dir)
	}
	_, err := within(r, func() (struct{}, error) {
		rel, err := r.clean(p)
		if err != nil {
			return struct{}{}, err
		}
		fd, err := r.mkdirAll(rel)
		if err != nil {
			return struct{}{}, err
		}
		defer unix.Close(fd)
		if mode == 0 {
			mode = 0o755
		}
		// fchmod needs a real fd, not O_PATH: reopen it beneath the root.
		dfd, err := r.openBeneath(rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
		if err != nil {
			return struct{}{}, err
		}
		defer unix.Close(dfd)
		return struct{}{}, explain(rel, unix.Fchmod(dfd, uint32(mode.Perm())))
	})
	return err
}
