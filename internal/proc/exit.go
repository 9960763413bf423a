// Package proc starts and tracks the server's host processes: every child
// is started through StartTracked so that, when the server is a child
// subreaper, the orphan sweeper tells deliberate children from orphans
// (SweepOrphans); run markers in the environment find what a run left even
// after its server died (SweepDeadRunsOnce); the server's watchdog
// (StartWatchdog, GuardGroup, GuardContainers) ends its runs as soon as it
// dies, however it dies; HostProc is a started run with
// its stdio pipes, group signalling and cleanup hooks, which the sandbox
// backends return as their Process. Any package that starts a host process
// (installers, interpreter probes, container CLIs) uses StartTracked or
// RunTracked instead of cmd.Start.
package proc

import (
	"os"
	"syscall"
	"time"
)

// Exit describes how a program ended.
type Exit struct {
	// Code is the exit status, or -1 when the program was killed by a signal.
	Code int
	// Signal is the terminating signal number, 0 if it exited normally.
	Signal int
	// OOMKilled is true when the memory limit killed the program.
	OOMKilled bool
	// MemoryPeakBytes is the peak memory use if the backend measured it, else 0.
	MemoryPeakBytes int64
	// Usage is what else the run used, where the backend measured it.
	Usage Usage
}

// Usage sources: where a run's measurements came from (Usage.CPUFrom,
// Usage.MemoryFrom).
const (
	// FromCgroup: the run's control group's counters, covering every
	// process of the run.
	FromCgroup = "cgroup"
	// FromRusage: the kernel's accounting of the reaped process tree
	// (wait4's rusage): CPU of every process the tree waited for, memory
	// of its largest single process.
	FromRusage = "rusage"
)

// Usage is what a run used, as measured. A field whose source is empty
// was not measured (it is not a zero measurement).
type Usage struct {
	CPUUser, CPUSystem time.Duration
	// CPUFrom says how CPUUser and CPUSystem were measured ("" for not).
	CPUFrom string
	// RusageMaxRSS is the largest resident set of one process of the
	// reaped tree (wait4's ru_maxrss), 0 when not measured.
	RusageMaxRSS int64
	// ProcessesPeak is the most processes the run had at once (the
	// cgroup's pids.peak), 0 when not measured.
	ProcessesPeak int64
	// Path is how the sandbox was obtained: PathWarm, PathForked or
	// PathCold ("" when the backend does not say).
	Path string
}

// Reading is what a running run's counters say at one moment, for what
// lives across several runs (a session's interpreter): the cost of one of
// its runs is the difference of two readings.
type Reading struct {
	// CPUUser and CPUSystem are the CPU time used so far, when CPUKnown.
	CPUUser, CPUSystem time.Duration
	CPUKnown           bool
	// MemoryPeak is the peak memory (every process together) since the
	// last reading that reset it (0: not measured).
	MemoryPeak int64
	// PeakReset: this reading restarted the peak from the current use, so
	// the next reading's MemoryPeak is the peak between the two.
	PeakReset bool
}

// Sandbox paths (Usage.Path).
const (
	PathWarm   = "warm"
	PathForked = "forked"
	PathCold   = "cold"
)

// rusageOf is the kernel's accounting of ps's process tree (CPU of every
// process it waited for, the largest one's peak resident set).
func rusageOf(ps *os.ProcessState) (Usage, bool) {
	if ps == nil {
		return Usage{}, false
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return Usage{}, false
	}
	return Usage{CPUUser: time.Duration(ru.Utime.Nano()), CPUSystem: time.Duration(ru.Stime.Nano()), CPUFrom: FromRusage,
		RusageMaxRSS: maxRSSBytes(ru.Maxrss)}, true
}
