package cgroup

import (
	"fmt"
	"path/filepath"
	"strconv"
	"syscall"
)

// v2Controllers are the controllers a v2 group needs.
var v2Controllers = []string{"memory", "pids", "cpu"}

func newV2(name string, l Limits) (*Group, error) {
	dir, err := groupDir(filepath.Join(Root, parent), name, true, delegateV2)
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

// delegateV2 enables the controllers from the root down to the server's
// directory od (idempotent), so its groups have them.
func delegateV2(od string) error {
	for _, dir := range []string{Root, filepath.Dir(od), od} {
		if err := write(dir, "cgroup.subtree_control", "+memory +pids +cpu"); err != nil {
			return err
		}
	}
	return nil
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
