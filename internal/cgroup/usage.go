package cgroup

import "time"

// Usage is what a group's processes used, from its counters. A false
// CPUKnown, or a zero ProcessesPeak, is not measured.
type Usage struct {
	CPUUser, CPUSystem time.Duration
	CPUKnown           bool
	// ProcessesPeak is the most processes the group held at once.
	ProcessesPeak int64
}

// Usage reads the group's CPU time (v2 cpu.stat, which every v2 group
// has; v1 cpuacct, co-mounted with cpu as systemd mounts it or in a
// hierarchy of its own) and its pids.peak. A group the pool reused reports no pids.peak: the
// kernel does not reset it, so it may be an earlier run's.
func (g *Group) Usage() Usage {
	if g == nil || len(g.dirs) == 0 {
		return Usage{}
	}
	var u Usage
	if g.v2 {
		user, uerr := g.readKeyOK(memIdx, "cpu.stat", "user_usec")
		sys, serr := g.readKeyOK(memIdx, "cpu.stat", "system_usec")
		u.CPUUser, u.CPUSystem, u.CPUKnown = time.Duration(user)*time.Microsecond, time.Duration(sys)*time.Microsecond, uerr && serr
		u.ProcessesPeak = g.readInt(memIdx, "pids.peak")
		return u
	}
	if i := g.acctDir(); len(g.dirs) > i {
		user, uerr := g.readIntOK(i, "cpuacct.usage_user")
		sys, serr := g.readIntOK(i, "cpuacct.usage_sys")
		u.CPUUser, u.CPUSystem, u.CPUKnown = time.Duration(user), time.Duration(sys), uerr && serr
	}
	if len(g.dirs) > pidsIdx && !g.reused {
		u.ProcessesPeak = g.readInt(pidsIdx, "pids.peak")
	}
	return u
}

// readIntOK is readInt that says whether the file was there and read.
func (g *Group) readIntOK(i int, file string) (int64, bool) {
	if _, err := g.get(i, file); err != nil {
		return 0, false
	}
	return g.readInt(i, file), true
}

// readKeyOK is readKey that says whether the file was there and read.
func (g *Group) readKeyOK(i int, file, key string) (int64, bool) {
	if _, err := g.get(i, file); err != nil {
		return 0, false
	}
	return g.readKey(i, file, key), true
}

// ResetMemoryPeak restarts the group's peak memory from its current use,
// so that MemoryPeak then covers only what follows (a session's next run).
// It reports whether it could: v1 resets memory.max_usage_in_bytes; v2's
// memory.peak is reset only for the reader that resets it, which
// MemoryPeak is not, so v2 reports false.
func (g *Group) ResetMemoryPeak() bool {
	if g == nil || g.v2 || len(g.dirs) == 0 {
		return false
	}
	return g.set(memIdx, "memory.max_usage_in_bytes", "0") == nil
}
