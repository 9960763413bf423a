package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// cgroupRoot is where the host's cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupV1Controllers are the v1 hierarchies a delegated cgroup is made
// in (those mounted here); the server's limits use these.
var cgroupV1Controllers = []string{"memory", "pids", "cpu", "freezer"}

var (
	delegateOnce sync.Once
	delegated    string   // CODEXEC_CGROUP_PARENT value
	delegateDirs []string // directories made, removed at the end
	delegateErr  error
)

// delegatedCgroup makes, once per test binary, a cgroup the account owns
// (as an operator delegates one) and returns its path below each
// hierarchy's root, the value of CODEXEC_CGROUP_PARENT. v1: a directory in
// each controller's hierarchy, chowned recursively. v2: one directory with
// the parent's controllers enabled for it, chowned with its cgroup.procs
// and cgroup.subtree_control. removeDelegatedCgroup undoes it.
func delegatedCgroup(a *testAccount) (string, error) {
	delegateOnce.Do(func() {
		name := fmt.Sprintf("codexec-rootless-%d", os.Getpid())
		delegated = "/" + name
		if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
			delegateErr = delegateV2(a, filepath.Join(cgroupRoot, name))
			return
		}
		delegateErr = delegateV1(a, name)
	})
	return delegated, delegateErr
}

func delegateV1(a *testAccount, name string) error {
	for _, c := range cgroupV1Controllers {
		root := filepath.Join(cgroupRoot, c)
		if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
			continue // this controller is not mounted on its own here
		}
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		delegateDirs = append(delegateDirs, dir)
		if err := chownTree(dir, a.UID, a.GID); err != nil {
			return err
		}
	}
	if len(delegateDirs) == 0 {
		return errors.New("no cgroup v1 hierarchy of memory, pids, cpu or freezer is mounted below " + cgroupRoot)
	}
	return nil
}

func delegateV2(a *testAccount, dir string) error {
	avail, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers"))
	if err != nil {
		return err
	}
	var enable []string
	for _, c := range strings.Fields(string(avail)) {
		if c == "memory" || c == "pids" || c == "cpu" {
			enable = append(enable, "+"+c)
		}
	}
	if len(enable) > 0 {
		if err := os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0); err != nil {
			return fmt.Errorf("enabling %v for child cgroups: %w", enable, err)
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	delegateDirs = append(delegateDirs, dir)
	if len(enable) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0); err != nil {
			return fmt.Errorf("enabling %v below %s: %w", enable, dir, err)
		}
	}
	// The servers start in a leaf of the delegated group: on v2 a process
	// may move another only within a subtree whose cgroup.procs it can
	// write, so the server must already be inside it.
	if err := os.Mkdir(filepath.Join(dir, delegatedV2Leaf), 0o755); err != nil {
		return err
	}
	for _, d := range []string{dir, filepath.Join(dir, delegatedV2Leaf)} {
		for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
			if err := os.Chown(filepath.Join(d, f), a.UID, a.GID); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// delegatedV2Leaf is the child of a v2 delegated cgroup the servers start in.
const delegatedV2Leaf = "servers"

// placeInDelegatedCgroup makes cmd start inside the delegated cgroup on
// cgroup v2 (nothing to do on v1, where any writer of a group's
// cgroup.procs may move a process of its own into it). The returned
// function closes the directory handle once the command has started.
func placeInDelegatedCgroup(cmd *exec.Cmd) (func(), error) {
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err != nil {
		return func() {}, nil
	}
	f, err := os.Open(filepath.Join(cgroupRoot, delegated, delegatedV2Leaf))
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(f.Fd())
	return func() { _ = f.Close() }, nil
}

// chownTree gives dir and everything in it to uid:gid.
func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// removeDelegatedCgroup removes the delegated cgroups and any group the
// servers left in them, deepest first (a cgroup directory is removed with
// rmdir; its files go with it). Processes still inside keep theirs.
func removeDelegatedCgroup() error {
	var errs []error
	for _, dir := range delegateDirs {
		var dirs []string
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
