package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/codexec/codexec/internal/instance"
)

// Every server keeps its groups in a directory of its own below the parent
// of each hierarchy, named after it (package instance) with ownerSuffix:
//
//	/sys/fs/cgroup/codexec/<pid>-<start>-<boot>-<pidns>.server/<group>
//
// or, for a server given a parent (Info.Parent), the same below it. The name says which server made the groups in any pid namespace, and the
// server holds a lock (flock) on its directory in the first hierarchy (v2:
// the only one; v1: memory) from the moment it makes it until it exits: the
// kernel drops the lock with the process, so another server, in whatever pid
// namespace, sees a free lock only on a dead server's directory — or on one
// whose server has just made it and not yet locked it (see Sweep).
//
// The suffix does not end in a digit: earlier versions only judged names
// ending in "-<pid>", so they never touch these directories.
const ownerSuffix = ".server"

// ownerName is this server's directory name.
func ownerName() string { return instance.Self() + ownerSuffix }

// owner caches this server's directories by hierarchy parent, and holds the
// lock.
var owner struct {
	mu       sync.Mutex
	dirs     map[string]string
	lockBase string // the base whose directory lock holds
	lock     *os.File
}

// groupDir makes the directory of group name in this server's directory
// below base, making and, when locked is set, locking that first. prepare
// runs on each new server directory (v2: delegating controllers).
func groupDir(base, name string, locked bool, prepare func(dir string) error) (string, error) {
	for try := 0; ; try++ {
		od, err := ownerDir(base, locked, prepare)
		if err != nil {
			return "", err
		}
		dir := filepath.Join(od, name)
		err = os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		// Removed under us (by hand: sweeps spare a locked directory):
		// make it again.
		if !errors.Is(err, fs.ErrNotExist) || try > 0 {
			return "", fmt.Errorf("cgroup: %w", err)
		}
		forgetOwnerDir(base)
	}
}

// ownerDir returns this server's directory below base, made (and locked)
// at first use.
func ownerDir(base string, locked bool, prepare func(dir string) error) (_ string, retErr error) {
	owner.mu.Lock()
	defer owner.mu.Unlock()
	if dir, ok := owner.dirs[base]; ok {
		return dir, nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("cgroup: %w", err)
	}
	dir := filepath.Join(base, ownerName())
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("cgroup: %w", err)
	}
	defer func() {
		if retErr != nil {
			_ = syscall.Rmdir(dir)
		}
	}()
	if locked {
		if err := holdLock(dir); err != nil {
			return "", err
		}
		owner.lockBase = base
	}
	if prepare != nil {
		if err := prepare(dir); err != nil {
			return "", err
		}
	}
	if owner.dirs == nil {
		owner.dirs = map[string]string{}
	}
	owner.dirs[base] = dir
	return dir, nil
}

// holdLock locks dir for the life of the process (in place of an earlier
// lock, of a directory since removed).
func holdLock(dir string) error {
	if owner.lock != nil && sameDir(owner.lock, dir) {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	if err := lockDir(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("cgroup: lock %s: %w", dir, err)
	}
	if owner.lock != nil {
		_ = owner.lock.Close()
	}
	owner.lock = f
	return nil
}

func forgetOwnerDir(base string) {
	owner.mu.Lock()
	defer owner.mu.Unlock()
	delete(owner.dirs, base)
}

// Release removes this server's directories once they hold no group (at a
// clean shutdown, after the last Destroy), the locked one last, and drops
// the lock with it. A directory still in use stays; a later New makes
// missing ones again.
func Release() {
	owner.mu.Lock()
	defer owner.mu.Unlock()
	for base, dir := range owner.dirs {
		if base != owner.lockBase && syscall.Rmdir(dir) == nil {
			delete(owner.dirs, base)
		}
	}
	dir, ok := owner.dirs[owner.lockBase]
	if len(owner.dirs) != 1 || !ok || syscall.Rmdir(dir) != nil {
		return
	}
	delete(owner.dirs, owner.lockBase)
	if owner.lock != nil {
		_ = owner.lock.Close()
		owner.lock = nil
	}
}

// OwnDirs lists the directories of this server in the hierarchies of
// info, whether they exist yet or not: every group of its runs is beneath
// them.
func OwnDirs(info Info) []string {
	if info.Version == 0 {
		return nil
	}
	var dirs []string
	for _, base := range parents(info) {
		dirs = append(dirs, filepath.Join(base, ownerName()))
	}
	return dirs
}

// ServerDirs lists the directories that the server named id (package
// instance) has in the hierarchies of info, and the groups in them.
func ServerDirs(info Info, id string) (dirs, groups []string) {
	if info.Version == 0 {
		return nil, nil
	}
	for _, base := range parents(info) {
		dir := filepath.Join(base, id+ownerSuffix)
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		dirs = append(dirs, dir)
		for _, e := range entries {
			if e.IsDir() {
				groups = append(groups, filepath.Join(dir, e.Name()))
			}
		}
	}
	return dirs, groups
}
