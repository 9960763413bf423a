package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A workspace is either codexec's own (a directory below the backend's
// owned root, created for one run or session) or a caller's host directory
// (working_dir, cwd). codexec's own workspaces are handed to the sandbox
// user by ownership. A caller's directory is never changed — no chown, no
// chmod, no ACL: it is mounted read-only, or, when the operator made it
// writable (Spec.DirWritable), writable with exactly the rights the
// directory itself gives the sandbox user — or, with Spec.DirOwner, its
// owner (an idmapped mount).

// ownedWorkspace reports whether dir lies strictly below root.
func ownedWorkspace(root, dir string) bool {
	return root != "" && dir != "" && strings.HasPrefix(dir, filepath.Clean(root)+"/")
}

// CallerWorkspace reports whether spec's workspace is a caller's directory
// (working_dir, cwd), not one of codexec's own below ownedRoot.
func CallerWorkspace(spec Spec, ownedRoot string) bool {
	return spec.Dir != "" && !ownedWorkspace(ownedRoot, spec.Dir)
}

// WorkspaceReadOnly reports whether spec's workspace is mounted read-only
// in isolated modes: a caller's directory not made writable.
func WorkspaceReadOnly(spec Spec, ownedRoot string) bool {
	return spec.Dir != "" && !spec.DirWritable && !ownedWorkspace(ownedRoot, spec.Dir)
}

// HandOverWorkspace gives codexec's own workspace (below ownedRoot) to the
// sandbox user uid:gid (recursively, only entries not yet owned); a caller's
// is left as it is.
func HandOverWorkspace(spec Spec, ownedRoot string, uid, gid int) error {
	if !ownedWorkspace(ownedRoot, spec.Dir) {
		return nil
	}
	return filepath.WalkDir(spec.Dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) == nil && int(st.Uid) == uid {
			return nil
		}
		return os.Lchown(p, uid, gid)
	})
}

// Mask is one forbidden path below a workspace (~/.ssh, the data
// directory, …) as the sandbox sees it: hidden by an empty read-only
// tmpfs (Dir) or /dev/null.
type Mask struct {
	Path string
	Dir  bool
}

// MasksBelow lists the paths of list strictly below dir that the sandbox
// user uid could reach, as seen inside the sandbox where dir is mounted at
// target. Paths it cannot reach need no mask (and bwrap, running as that
// uid, could not create one there).
func MasksBelow(list []string, dir, target string, uid int) []Mask {
	var out []Mask
	for _, m := range list {
		if m == dir || !strings.HasPrefix(m, dir+"/") || !CanReach(dir, m, uid) {
			continue
		}
		if fi, err := os.Stat(m); err == nil {
			out = append(out, Mask{Path: target + strings.TrimPrefix(m, dir), Dir: fi.IsDir()})
		}
	}
	return out
}

// CanReach reports whether the sandbox user uid can traverse every
// directory between dir and path (exclusive).
func CanReach(dir, path string, uid int) bool {
	for p := filepath.Dir(path); p != dir && strings.HasPrefix(p, dir+"/"); p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || (fi.Mode()&0o001 == 0 && int(st.Uid) != uid) {
			return false
		}
	}
	return true
}
