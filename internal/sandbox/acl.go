package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// POSIX ACL extended-attribute layout (linux/posix_acl_xattr.h).
const (
	aclVersion  = 2
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclMask     = 0x10
	aclOther    = 0x20
	aclNoID     = 0xffffffff
)

// grantACL gives uid rwx on dir (and, as a default ACL, on what is created in
// it) without changing ownership or existing files. A directory that already
// carries an ACL is left alone.
func grantACL(dir string, uid int) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return err
	}
	if _, err := unix.Getxattr(dir, "system.posix_acl_access", nil); err == nil {
		return nil
	}
	mode := st.Mode
	acl := aclBytes(mode, uid)
	for _, name := range []string{"system.posix_acl_access", "system.posix_acl_default"} {
		if err := unix.Setxattr(dir, name, acl, 0); err != nil {
			if errors.Is(err, unix.ENOTSUP) {
				return fmt.Errorf("sandbox: %s is on a file system without POSIX ACLs, so the sandbox user cannot write to it", dir)
			}
			return fmt.Errorf("sandbox: grant sandbox user access to %s: %w", dir, err)
		}
	}
	return nil
}

func aclBytes(mode uint32, uid int) []byte {
	entries := [][3]uint32{
		{aclUserObj, (mode >> 6) & 7, aclNoID},
		{aclUser, 7, uint32(uid)},
		{aclGroupObj, (mode >> 3) & 7, aclNoID},
		{aclMask, 7, aclNoID},
		{aclOther, mode & 7, aclNoID},
	}
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}
