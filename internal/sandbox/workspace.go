package sandbox

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// A workspace is either codexec's own (a directory below the backend's
// owned root, created for one run or session) or a caller's host directory
// (working_dir, cwd). codexec's own workspaces are handed to the sandbox
// user by ownership. A caller's directory is never changed — no chown, no
// chmod, no ACL: it is mounted read-only, or, when the operator made it
// writable (Spec.DirWritable), writable with exactly the rights the
// directory itself gives the sandbox user.

// ownedWorkspace reports whether dir lies strictly below root.
func ownedWorkspace(root, dir string) bool {
	return root != "" && dir != "" && strings.HasPrefix(dir, filepath.Clean(root)+"/")
}

// workspaceReadOnly reports whether spec's workspace is mounted read-only.
func workspaceReadOnly(spec Spec, ownedRoot string) bool {
	return spec.Dir != "" && !spec.DirWritable && !ownedWorkspace(ownedRoot, spec.Dir)
}

// handOverWorkspace gives codexec's own workspace to the sandbox user
// (recursively, only entries not yet owned); a caller's is left as it is.
func handOverWorkspace(spec Spec, ownedRoot string, uid, gid int) error {
	if !ownedWorkspace(ownedRoot, spec.Dir) {
		return nil
	}
	return filepath.WalkDir(spec.Dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil && int(st.Uid) == uid {
			return nil
		}
		return os.Lchown(p, uid, gid)
	})
}
