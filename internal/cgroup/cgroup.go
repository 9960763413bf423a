// Package cgroup creates one control group per sandboxed run and uses it to
// limit memory, CPU and process count, to kill every process of the run
// (including daemons that left the process group), and to tell whether the
// memory limit killed it. It supports cgroup v1 (one hierarchy per controller,
// as on hosts in hybrid mode) and cgroup v2 (the unified hierarchy).
//
// Processes are placed by writing a pid to every file ProcsFiles returns,
// before the run's program is executed (see sandbox-init). A Group is safe for
// concurrent use; Destroy must be called exactly once.
//
// Groups live in a directory of the server that made them, named after it
// and locked while it runs (owner.go), so that a starting server's Sweep
// removes what dead servers left and nothing of a live one, whatever pid
// namespaces the two are in. A server run as root keeps these directories
// in a default place (Detect); one run as a normal user, below a parent
// delegated to that user (DetectIn, detect.go).
package cgroup

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Root is where cgroup file systems are mounted.
const Root = "/sys/fs/cgroup"

// groupsDir is the directory below each hierarchy (v1: below the server's
// own group) that holds codexec's groups when no parent is configured, and
// below the user's systemd manager when codexec runs as a user (detect.go).
const groupsDir = "codexec"

// Limits are a group's resource limits; zero means unlimited.
type Limits struct {
	MemoryBytes int64
	CPUs        float64
	Pids        int
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Group is one run's control group. A nil *Group is a run without one
// (codexec without root and without a delegated cgroup): every method is a
// no-op that reports nothing (no pids, no peak, no OOM kill), and killing
// the run is the caller's business (its pid namespace).
type Group struct {
	v2   bool
	dirs []string // v1: one per controller (see v1Controllers); v2: one
	// fds are O_PATH descriptors of dirs (file.go); closed marks a group
	// whose Destroy closed them. mu guards both.
	mu     sync.RWMutex
	fds    []int
	closed bool
	// pinned: the group counts towards the freezer pin (pin.go).
	pinned bool
	// killed is when (UnixNano) a kill last sent SIGKILL to every process
	// of the group with nothing able to fork meanwhile (see Drain).
	killed atomic.Int64
	// pool, when set, may keep the group at Destroy for a New with the same
	// limits; moved marks a value whose directories the pool handed to a
	// new Group (inert: Destroy does nothing). oomBase is the OOM-kill
	// count the group had when it was last reset.
	pool    *Pool
	limits  Limits
	moved   atomic.Bool
	oomBase int64
	// reused: the pool handed this group's directories on from an earlier
	// run (counters the kernel cannot reset are not this run's).
	reused bool
}

// New creates the group named name (unique among this server's groups, such
// as a run id) in this server's directory, with limits applied.
func New(info Info, name string, l Limits) (*Group, error) {
	if !info.Usable() {
		return nil, fmt.Errorf("cgroup: %s", info)
	}
	if info.Version == 2 {
		return newV2(info, name, l)
	}
	return newV1(parents(info), name, l)
}

// ProcsFiles lists the cgroup.procs files a process must be written to.
func (g *Group) ProcsFiles() []string {
	if g == nil {
		return nil
	}
	out := make([]string, len(g.dirs))
	for i, d := range g.dirs {
		out[i] = filepath.Join(d, "cgroup.procs")
	}
	return out
}

// Pids lists the processes in the group (none when no directory was made:
// a New that failed at its first mkdir destroys such a group).
func (g *Group) Pids() []int {
	if g == nil {
		return nil
	}
	if len(g.dirs) == 0 {
		return nil
	}
	return g.pidsIn(memIdx)
}

// Signal sends sig to every process in the group except those in skip.
func (g *Group) Signal(sig syscall.Signal, skip ...int) {
	if g == nil {
		return
	}
	for _, pid := range g.Pids() {
		if !containsInt(skip, pid) {
			_ = syscall.Kill(pid, sig)
		}
	}
}

func containsInt(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

// Kill stops every process of the group with SIGKILL, including ones forked
// while it runs: v2 uses cgroup.kill; v1 freezes the group first so nothing
// can fork between listing and killing.
func (g *Group) Kill() error {
	if g == nil {
		return nil
	}
	_, err := g.kill()
	return err
}

// kill is Kill that also reports whether it found the group empty.
func (g *Group) kill() (empty bool, err error) {
	if len(g.Pids()) == 0 {
		return true, nil // empty: nothing can fork into it any more
	}
	var complete bool
	if g.v2 {
		complete, err = g.killV2()
	} else {
		complete, err = g.killV1()
	}
	if complete {
		g.killed.Store(time.Now().UnixNano())
	}
	return false, err
}

// OOMKilled reports whether the kernel's OOM killer killed a process of the
// group because of its memory limit.
func (g *Group) OOMKilled() bool {
	if g == nil {
		return false
	}
	return g.oomKills() > g.oomBase
}

// oomKills is the number of processes the OOM killer killed in the group.
func (g *Group) oomKills() int64 {
	file, key := "memory.oom_control", "oom_kill"
	if g.v2 {
		file = "memory.events"
	}
	return g.readKey(memIdx, file, key)
}

// MemoryPeak returns the peak memory use in bytes, or 0 if unknown.
func (g *Group) MemoryPeak() int64 {
	if g == nil {
		return 0
	}
	file := "memory.max_usage_in_bytes"
	if g.v2 {
		file = "memory.peak"
	}
	return g.readInt(memIdx, file)
}

// Drain kills every process and waits (up to 5 s) until the group is empty.
// It returns the deadline it used.
//
// Processes that a complete kill (see killed) reached less than
// killAgainAfter ago are dying, not running: Drain waits for them to exit
// rather than freezing and killing the group again, and kills anew what is
// still there after that (a process that placed itself in the group late).
func (g *Group) Drain() time.Time {
	if g == nil {
		return time.Time{}
	}
	deadline := time.Now().Add(5 * time.Second)
	for pause := 100 * time.Microsecond; ; pause = min(2*pause, 2*time.Millisecond) {
		if len(g.Pids()) == 0 || time.Now().After(deadline) {
			return deadline
		}
		if time.Since(time.Unix(0, g.killed.Load())) > killAgainAfter {
			// A group found empty stays so: processes enter a group only by
			// being written to it (at its start) or by forking inside it.
			if empty, _ := g.kill(); empty {
				return deadline
			}
		}
		time.Sleep(pause)
	}
}

// killAgainAfter is how long Drain lets killed processes take to exit.
const killAgainAfter = 20 * time.Millisecond

// Destroy kills what is left, waits (up to 5 s) for the group to empty and
// removes it, or gives it back to its Pool.
func (g *Group) Destroy() error {
	if g == nil {
		return nil
	}
	if g.moved.Load() {
		return nil // its directories are another Group's now
	}
	deadline := g.Drain()
	if g.pool != nil && g.pool.keep(g) {
		return nil
	}
	if g.pinned {
		g.pinned = false
		defer releasePin()
	}
	var errs []error
	for i := len(g.dirs) - 1; i >= 0; i-- {
		if err := rmdirRetry(g.dirs[i], deadline); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...) // left to sweeps: keep the descriptors
	}
	g.closeDirs()
	return nil
}

func rmdirRetry(dir string, deadline time.Time) error {
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("cgroup: rmdir %s: %w", dir, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// readKey returns the value of "key N" in the flat-keyed control file
// named file of directory i.
func (g *Group) readKey(i int, file, key string) int64 {
	b, err := g.get(i, file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// readInt returns the number in the one-value control file named file of
// directory i, or 0.
func (g *Group) readInt(i int, file string) int64 {
	b, err := g.get(i, file)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// SetCPUWeight sets the group's share of contended CPU relative to its
// siblings: 1024 is the default (v1 cpu.shares; scaled to v2 cpu.weight,
// where 100 is the default). Warm runners start with a low weight so that
// starting them never takes CPU from running code, and get the default when
// a run takes them.
func (g *Group) SetCPUWeight(shares int) error {
	if g == nil {
		return nil
	}
	if g.v2 {
		return g.set(0, "cpu.weight", strconv.Itoa(max(1, min(10000, shares*100/1024))))
	}
	if len(g.dirs) < 3 {
		return nil
	}
	return g.set(cpuIdx, "cpu.shares", strconv.Itoa(max(2, shares)))
}

// MemoryCurrent returns the group's current memory use in bytes, or 0.
func (g *Group) MemoryCurrent() int64 {
	if g == nil {
		return 0
	}
	file := "memory.usage_in_bytes"
	if g.v2 {
		file = "memory.current"
	}
	return g.readInt(memIdx, file)
}
