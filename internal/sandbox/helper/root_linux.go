package helper

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// enterRoot carries out a RootOption plan on the calling (locked) thread,
// as root: join the template mount namespace, unshare a private copy of
// it, and move each tree onto its point there. fd maps an extra-descriptor
// index to this process's descriptor. Every descriptor of the plan is
// closed, so bwrap inherits none of them.
func enterRoot(plan string, fd func(k int) (int, bool)) error {
	fields := strings.Fields(plan)
	if len(fields) == 0 {
		return fmt.Errorf("empty %s plan", RootOption)
	}
	ns, err := planFd(fields[0], fd)
	if err != nil {
		return err
	}
	// Go's threads share one fs_struct, which setns(CLONE_NEWNS) refuses:
	// this thread (the one that will exec) takes its own.
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("unshare fs: %w", err)
	}
	if err := unix.Setns(ns, unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("join the template namespace: %w", err)
	}
	_ = unix.Close(ns)
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("copy the template namespace: %w", err)
	}
	for _, f := range fields[1:] {
		k, point, ok := strings.Cut(f, ":")
		if !ok {
			return fmt.Errorf("bad %s entry %q", RootOption, f)
		}
		tree, err := planFd(k, fd)
		if err != nil {
			return err
		}
		if err := unix.MoveMount(tree, "", unix.AT_FDCWD, point, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("mount on %s: %w", point, err)
		}
		_ = unix.Close(tree)
	}
	return unix.Chdir("/")
}

func planFd(s string, fd func(k int) (int, bool)) (int, error) {
	k, err := strconv.Atoi(s)
	if err != nil {
		return -1, fmt.Errorf("bad %s descriptor %q", RootOption, s)
	}
	d, ok := fd(k)
	if !ok {
		return -1, fmt.Errorf("%s descriptor %d missing", RootOption, k)
	}
	return d, nil
}
