package cgroup

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// v2Controllers are the controllers a v2 group needs.
var v2Controllers = []string{"memory", "pids", "cpu"}

func newV2(info Info, name string, l Limits) (*Group, error) {
	top := info.delegationTop()
	dir, err := groupDir(parents(info)[0], name, true, func(od string) error { return enableDown(top, od) })
	if err != nil {
		return nil, err
	}
	g := &Group{v2: true, dirs: []string{dir}}
	err = g.openDirs()
	if err == nil {
		err = g.limitV2(l)
	}
	if err != nil {
		_ = g.Destroy()
		return nil, err
	}
	return g, nil
}

// enableDown enables the controllers for the children of every directory
// from top (Root, or the delegated parent) down to dir, so that groups made
// in dir have them. Only missing ones are written: a group holding
// processes (other than the root) may give its children none, and the
// directories codexec makes below top hold none.
func enableDown(top, dir string) error {
	rel, err := filepath.Rel(top, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("cgroup: %s is not below %s", dir, top)
	}
	dirs := []string{top}
	if rel != "." {
		for _, e := range strings.Split(rel, "/") {
			dirs = append(dirs, filepath.Join(dirs[len(dirs)-1], e))
		}
	}
	for _, d := range dirs {
		if err := enable(d); err != nil {
			return err
		}
	}
	return nil
}

// enable enables the missing needed controllers in dir's
// cgroup.subtree_control.
func enable(dir string) error {
	b, err := readAt(atCwd, filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	_, missing := split(v2Controllers, strings.Fields(string(b)))
	if len(missing) == 0 {
		return nil
	}
	err = write(dir, "cgroup.subtree_control", "+"+strings.Join(missing, " +"))
	if errors.Is(err, syscall.EBUSY) {
		return fmt.Errorf("%w: %s holds processes, and cgroup v2 gives controllers to the children of a group only while it holds none: run codexec in a child group of it, or set CODEXEC_CGROUP_PARENT to a group without processes", err, dir)
	}
	return err
}

func (g *Group) limitV2(l Limits) error {
	if l.MemoryBytes > 0 {
		if err := g.set(0, "memory.max", strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return err
		}
		_ = g.set(0, "memory.swap.max", "0") // absent without swap accounting
	}
	if l.Pids > 0 {
		if err := g.set(0, "pids.max", strconv.Itoa(l.Pids)); err != nil {
			return err
		}
	}
	if l.CPUs > 0 {
		return g.set(0, "cpu.max", fmt.Sprintf("%d 100000", int(l.CPUs*100000)))
	}
	return nil
}

// killV2 uses cgroup.kill (Linux ≥ 5.14; complete: the kernel also kills
// what forks meanwhile), else freezes and kills each pid.
func (g *Group) killV2() (complete bool, err error) {
	if err := g.set(0, "cgroup.kill", "1"); err == nil {
		return true, nil
	}
	_ = g.set(0, "cgroup.freeze", "1")
	g.Signal(syscall.SIGKILL)
	return false, g.set(0, "cgroup.freeze", "0")
}
