package cgroup

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// v1Controllers are the v1 hierarchies a group needs: memory first (its
// directory is the one listed by Pids), freezer for race-free kill.
var v1Controllers = []string{"memory", "pids", "cpu", "freezer"}

// Indexes of a Group's dirs: v1 (as v1Controllers, then acctIdx where
// cpuacct is a hierarchy of its own) and v2 (memIdx only).
const (
	memIdx = iota
	pidsIdx
	cpuIdx
	frzIdx
	acctIdx
)

// acctController is the v1 controller that accounts the CPU time of a
// group's processes. systemd mounts it with cpu ("cpu,cpuacct"), where
// the cpu directory has its files; a host that mounts it apart gives each
// group a fifth directory in its hierarchy (see separateAcct), so that runs
// whose processes are not reaped by the server (warm and forked runners)
// still report their CPU time.
const acctController = "cpuacct"

// separateAcct reports whether root's v1 cpuacct controller is mounted as
// a hierarchy of its own, apart from cpu.
func separateAcct(root string) bool {
	if _, err := os.Stat(filepath.Join(root, "cpu", "cpuacct.usage")); err == nil {
		return false // co-mounted: the cpu directory accounts
	}
	_, err := os.Stat(filepath.Join(root, acctController, "cpuacct.usage"))
	return err == nil
}

// acctDir is the index of the group's directory with the cpuacct files:
// its own hierarchy's where it has one, else the cpu one (co-mounted).
func (g *Group) acctDir() int {
	if len(g.dirs) > acctIdx {
		return acctIdx
	}
	return cpuIdx
}

// newV1 makes the group in bases (one per v1Controllers, then cpuacct's
// where it is a hierarchy of its own).
func newV1(bases []string, name string, l Limits) (*Group, error) {
	g := &Group{}
	for i, base := range bases {
		// The first (memory) holds the server's lock.
		dir, err := groupDir(base, name, i == 0, nil)
		if err != nil && i == acctIdx {
			// Only CPU time is measured there: without it the run goes on
			// unmeasured rather than not at all.
			slog.Debug("cgroup: no cpuacct group; CPU time is not measured", "err", err)
			break
		}
		if err != nil {
			_ = g.Destroy()
			return nil, err
		}
		g.dirs = append(g.dirs, dir)
	}
	g.pinned = true
	acquirePin(bases[frzIdx])
	err := g.openDirs()
	if err == nil {
		err = g.limitV1(l)
	}
	if err != nil {
		_ = g.Destroy()
		return nil, err
	}
	return g, nil
}

func (g *Group) limitV1(l Limits) error {
	if l.MemoryBytes > 0 {
		v := strconv.FormatInt(l.MemoryBytes, 10)
		if err := g.set(memIdx, "memory.limit_in_bytes", v); err != nil {
			return err
		}
		// No swap on top of the limit, where swap accounting exists.
		if hasMemsw(g.dirs[memIdx]) {
			if err := g.set(memIdx, "memory.memsw.limit_in_bytes", v); err != nil {
				return err
			}
		}
	}
	if l.Pids > 0 {
		if err := g.set(pidsIdx, "pids.max", strconv.Itoa(l.Pids)); err != nil {
			return err
		}
	}
	if l.CPUs > 0 {
		// The quota is per cfs period; the kernel gives every new group
		// the default period of 100000 µs, so it is not written.
		return g.set(cpuIdx, "cpu.cfs_quota_us", strconv.Itoa(int(l.CPUs*100000)))
	}
	return nil
}

// killV1 freezes the group, SIGKILLs every process, and thaws it so the
// signals are delivered. complete: the group was frozen while the kill
// listed and signalled its processes, so none escaped by forking.
func (g *Group) killV1() (complete bool, err error) {
	if len(g.dirs) < 4 {
		return false, nil
	}
	if err := g.set(frzIdx, "freezer.state", "FROZEN"); err != nil {
		g.Signal(syscall.SIGKILL)
		return false, err
	}
	// Freezing usually completes within tens of microseconds: poll with a
	// short, growing pause rather than a fixed millisecond.
	deadline := time.Now().Add(time.Second)
	for pause := 20 * time.Microsecond; time.Now().Before(deadline); pause = min(2*pause, time.Millisecond) {
		b, _ := g.get(frzIdx, "freezer.state")
		if strings.TrimSpace(string(b)) == "FROZEN" {
			complete = true
			break
		}
		time.Sleep(pause)
	}
	// The frozen processes are the freezer group's; one still being placed
	// (written to the memory group first, the freezer group last) is in the
	// memory group, which therefore holds every process of the pids and cpu
	// groups too.
	for _, i := range []int{frzIdx, memIdx} {
		for _, pid := range g.pidsIn(i) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return complete, g.set(frzIdx, "freezer.state", "THAWED")
}

// ownPath returns this process's cgroup path in the v1 hierarchy of
// controller c ("/" if unknown), so run groups nest below the server's own
// group and stay inside any limit the operator put on the server. It is
// read once: a server is placed in its cgroups before it starts (by its
// service manager or container runtime), not moved while it runs.
func ownPath(c string) string {
	for _, line := range strings.Split(string(ownCgroupFile()), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && contains(strings.Split(f[1], ","), c) {
			return f[2]
		}
	}
	return "/"
}

// ownCgroupFile returns this process's /proc/self/cgroup, read once.
func ownCgroupFile() []byte {
	own.once.Do(func() { own.cgroup, _ = os.ReadFile("/proc/self/cgroup") })
	return own.cgroup
}

// own caches what ownCgroupFile and hasMemsw read once per process.
var own struct {
	once   sync.Once
	cgroup []byte
	memsw  sync.Map // memory hierarchy directory → bool
}

// hasMemsw reports whether groups in the memory directory mem's hierarchy
// have swap accounting (memory.memsw.*): the kernel decides that at boot,
// so the answer for the first group holds for all.
func hasMemsw(mem string) bool {
	key := filepath.Dir(mem)
	if v, ok := own.memsw.Load(key); ok {
		return v.(bool)
	}
	_, err := os.Stat(filepath.Join(mem, "memory.memsw.limit_in_bytes"))
	own.memsw.Store(key, err == nil)
	return err == nil
}

// pidsIn lists the processes in directory i of the group.
func (g *Group) pidsIn(i int) []int {
	b, _ := g.get(i, "cgroup.procs")
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}
