// Package hostacl finds, and removes, the POSIX ACL entries that earlier
// codexec versions gave the sandbox user on host directories.
//
// Earlier versions' isolated modes made any accepted working_dir writable to the
// sandbox user by adding `user:<uid>:rwx` to the directory's access ACL and
// default ACL (so directories later created in it inherited the grant), and
// never removed it. Scan walks directory trees for ACL entries naming the
// sandbox user; Repair removes those whose shape is exactly what codexec
// wrote, restoring the directory's group bits, and leaves any other ACL to
// the operator (Finding.Command says how).
package hostacl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// POSIX ACL extended-attribute layout (linux/posix_acl_xattr.h).
const (
	xattrAccess  = "system.posix_acl_access"
	xattrDefault = "system.posix_acl_default"
	aclVersion   = 2
	tagUserObj   = 0x01
	tagUser      = 0x02
	tagGroupObj  = 0x04
	tagGroup     = 0x08
	tagMask      = 0x10
	tagOther     = 0x20
	noID         = 0xffffffff
)

type entry struct {
	tag, perm uint16
	id        uint32
}

// Finding is one directory whose ACLs name the sandbox user.
type Finding struct {
	Path string
	// Access and Default say which of the two ACLs name the user.
	Access, Default bool
	// Ours is true when every ACL on the directory has exactly the shape
	// codexec wrote (owner, the sandbox user rwx, group, mask rwx, other):
	// Repair removes those.
	Ours bool
}

// Command is the shell command that removes the sandbox user's entries.
func (f Finding) Command(uid int) string {
	return fmt.Sprintf("setfacl -x u:%d -x d:u:%d %q", uid, uid, f.Path)
}

// Options bound a Scan.
type Options struct {
	// UID is the sandbox user.
	UID int
	// MaxDepth is how many directory levels below each root are read
	// (0 = the root only).
	MaxDepth int
	// MaxDirs caps the directories examined per root.
	MaxDirs int
}

// Scan examines root and the directories below it (never through a
// symlink, never onto another file system than root's, within o's bounds)
// and returns those whose ACLs name o.UID. complete is false when a bound
// stopped it. A missing root gives no findings.
func Scan(root string, o Options) (found []Finding, complete bool) {
	var rootSt unix.Stat_t
	if unix.Lstat(root, &rootSt) != nil {
		return nil, true
	}
	dirs, complete := 0, true
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || st.Dev != rootSt.Dev {
			return filepath.SkipDir
		}
		if dirs++; dirs > o.MaxDirs {
			complete = false
			return filepath.SkipAll
		}
		if f, ok := examine(p, o.UID); ok {
			found = append(found, f)
		}
		if p != root && depth(root, p) >= o.MaxDepth {
			complete = complete && !hasSubdirs(p)
			return filepath.SkipDir
		}
		return nil
	})
	return found, complete
}

func depth(root, p string) int {
	rel, _ := filepath.Rel(root, p)
	n := 1
	for _, c := range rel {
		if c == filepath.Separator {
			n++
		}
	}
	return n
}

func hasSubdirs(p string) bool {
	es, _ := os.ReadDir(p)
	for _, e := range es {
		if e.IsDir() {
			return true
		}
	}
	return false
}

// examine reads p's ACLs.
func examine(p string, uid int) (Finding, bool) {
	f := Finding{Path: p, Ours: true}
	for _, name := range []string{xattrAccess, xattrDefault} {
		acl, err := readACL(p, name)
		if err != nil || acl == nil {
			continue
		}
		if !names(acl, uid) {
			f.Ours = false
			continue
		}
		if name == xattrAccess {
			f.Access = true
		} else {
			f.Default = true
		}
		f.Ours = f.Ours && ours(acl, uid)
	}
	return f, f.Access || f.Default
}

// readACL returns the entries of the named ACL (nil when there is none).
func readACL(p, name string) ([]entry, error) {
	buf := make([]byte, 1024)
	n, err := unix.Lgetxattr(p, name, buf)
	if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parse(buf[:n])
}

func parse(b []byte) ([]entry, error) {
	if len(b) < 4 || binary.LittleEndian.Uint32(b) != aclVersion || (len(b)-4)%8 != 0 {
		return nil, errors.New("hostacl: malformed ACL")
	}
	var out []entry
	for b = b[4:]; len(b) >= 8; b = b[8:] {
		out = append(out, entry{binary.LittleEndian.Uint16(b), binary.LittleEndian.Uint16(b[2:]), binary.LittleEndian.Uint32(b[4:])})
	}
	return out, nil
}

func names(acl []entry, uid int) bool {
	for _, e := range acl {
		if e.tag == tagUser && e.id == uint32(uid) {
			return true
		}
	}
	return false
}

// ours reports whether acl has exactly the entries codexec wrote:
// user_obj, user:uid rwx, group_obj, mask, other — nothing else. The mask
// is rwx where codexec set it, and narrowed by the creation mode in a
// directory that inherited the grant from a default ACL.
func ours(acl []entry, uid int) bool {
	if len(acl) != 5 {
		return false
	}
	want := []uint16{tagUserObj, tagUser, tagGroupObj, tagMask, tagOther}
	for i, e := range acl {
		if e.tag != want[i] {
			return false
		}
	}
	return acl[1].id == uint32(uid) && acl[1].perm == 7
}

// Repair removes codexec's ACLs from f.Path (f.Ours must be true) and
// restores the group permission bits the mask had replaced: the access
// ACL's group entry as limited by its mask (the creation mode's group bits,
// for a directory that inherited the grant). The directory is re-examined first, so a
// finding that changed since the scan is left alone; it is changed through
// a descriptor opened without following links.
func Repair(f Finding, uid int) error {
	cur, ok := examine(f.Path, uid)
	if !ok || !cur.Ours {
		return fmt.Errorf("%s: its ACLs are not (or no longer) exactly codexec's; remove the entries with: %s", f.Path, f.Command(uid))
	}
	fd, err := unix.Open(f.Path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	defer unix.Close(fd)
	if cur.Access {
		if err := repairAccess(fd, f.Path); err != nil {
			return err
		}
	}
	if cur.Default {
		if err := unix.Fremovexattr(fd, xattrDefault); err != nil && !errors.Is(err, unix.ENODATA) {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	return nil
}

// repairAccess removes the access ACL of the directory fd and puts its
// group entry's permissions back into the mode's group bits.
func repairAccess(fd int, p string) error {
	buf := make([]byte, 1024)
	n, err := unix.Fgetxattr(fd, xattrAccess, buf)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	acl, err := parse(buf[:n])
	if err != nil || !ours(acl, int(acl[1].id)) {
		return fmt.Errorf("%s: the ACL changed meanwhile; left alone", p)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if err := unix.Fremovexattr(fd, xattrAccess); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if err := unix.Fchmod(fd, uint32(st.Mode)&0o7707|uint32(acl[2].perm&acl[3].perm)<<3); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}
