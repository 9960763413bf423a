package cgroup

import (
	"errors"
	"slices"
	"strings"
	"sync"
)

// Pool keeps the emptied groups of finished runs, reset, for new groups
// with the same limits. A v1 group is four directories: making them, and
// removing them with the kernel's deferred work for a removed memory group,
// costs more than a run's whole share of the server's cgroup work.
//
// A group is kept only when its Destroy finds it empty and thawed, and after
// its counters that runs are told about are reset: peak memory and failure
// counts restart from its current use, the OOM-kill count is read as a
// baseline for OOMKilled, and memory still charged to it (page cache of
// files the last run read) is reclaimed when there is more than a little.
// New hands the group to its next run as a new Group value over the same
// directories; the old value is inert, as after Destroy, so a late kill or
// signal from the finished run's code cannot reach the next run's processes.
//
// Only v1 groups are pooled: v2 resets memory.peak for one reader only.
// Safe for concurrent use.
type Pool struct {
	info   Info
	max    int
	mu     sync.Mutex
	free   []*Group
	closed bool
}

// NewPool returns a Pool for groups of info's hierarchy that keeps at most
// max groups (0: none, every group is made and removed).
func NewPool(info Info, max int) *Pool {
	if info.Version != 1 {
		max = 0
	}
	return &Pool{info: info, max: max}
}

// New returns a group with limits l: a kept one, or a new one named name
// (see New). The caller destroys it with Destroy, which may keep it.
func (p *Pool) New(name string, l Limits) (*Group, error) {
	if g := p.take(l); g != nil {
		return g, nil
	}
	g, err := New(p.info, name, l)
	if err == nil && p.max > 0 {
		g.pool, g.limits = p, l
	}
	return g, err
}

// take removes and returns the kept group with limits l that was kept
// first, or nil: groups take turns, so each is reused soon after its run.
func (p *Pool) take(l Limits) *Group {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, g := range p.free {
		if g.limits == l {
			p.free = slices.Delete(p.free, i, i+1)
			return g
		}
	}
	return nil
}

// keep resets g, which Destroy found empty, and keeps it for a later New.
// It reports false when g is not kept (pool full or closed, g not empty,
// frozen, or a reset failed): Destroy then removes it as usual.
func (p *Pool) keep(g *Group) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g.moved.Load() {
		return true // a concurrent Destroy kept it
	}
	if p.closed || len(p.free) >= p.max || len(g.Pids()) > 0 {
		return false
	}
	fresh, err := g.reset()
	if err != nil {
		return false
	}
	p.free = append(p.free, fresh)
	return true
}

// Close removes the kept groups; groups destroyed later are removed too.
func (p *Pool) Close() {
	p.mu.Lock()
	free := p.free
	p.free, p.closed = nil, true
	p.mu.Unlock()
	for _, g := range free {
		_ = g.Destroy()
	}
}

// Kept is the number of groups the pool holds.
func (p *Pool) Kept() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// keepBelow bounds the memory still charged to an empty group that is kept:
// a few cached pages and kernel objects (60–150 KiB after a python print),
// which the next run's limit reclaims on demand. A group holding more (page
// cache of files its run read, such as a library's 38 MB) is removed
// instead: removal hands the pages to the parent group and they stay
// cached, where reclaiming them to reuse the group would evict them.
const keepBelow = 1 << 20

var errNotReusable = errors.New("cgroup: group not reusable")

// reset makes g's counters a new run's (see Pool) and returns the Group
// value that now owns g's directories; g itself becomes inert.
func (g *Group) reset() (*Group, error) {
	if g.v2 || len(g.dirs) < len(v1Controllers) {
		return nil, errNotReusable
	}
	if b, err := g.get(frzIdx, "freezer.state"); err != nil || strings.TrimSpace(string(b)) != "THAWED" {
		return nil, errNotReusable
	}
	if g.MemoryCurrent() > keepBelow {
		return nil, errNotReusable
	}
	counters := []string{"memory.max_usage_in_bytes", "memory.failcnt"}
	if hasMemsw(g.dirs[memIdx]) {
		counters = append(counters, "memory.memsw.max_usage_in_bytes", "memory.memsw.failcnt")
	}
	for _, f := range counters {
		if err := g.set(memIdx, f, "0"); err != nil {
			return nil, err
		}
	}
	// CPU time restarts from zero (writing 0 resets user and system time
	// too) where the group has cpuacct files.
	_ = g.set(g.acctDir(), "cpuacct.usage", "0")
	fresh := &Group{dirs: g.dirs, pool: g.pool, limits: g.limits, oomBase: g.oomKills(), reused: true}
	g.mu.Lock()
	defer g.mu.Unlock()
	fresh.fds, fresh.pinned = g.fds, g.pinned
	g.fds, g.closed, g.pinned = nil, true, false
	g.moved.Store(true)
	return fresh, nil
}
