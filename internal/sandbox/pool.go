package sandbox

import "time"

// Warm runners: a backend may serve a python, node or bash run (Spec.Warm)
// from a sandbox and interpreter (for bash: a stub that executes it) it
// started ahead of time, with the same isolation and behaviour as a cold
// start (see package warm).

// Runner kinds a Spec may ask for (Spec.Warm).
const (
	WarmPython = "python"
	WarmNode   = "node"
	WarmBash   = "bash"
)

// PoolOptions configure warm runners (CODEXEC_POOL_*).
type PoolOptions struct {
	// Size is the ready runners kept per kind; 0 disables warm runners.
	Size int
	// Burst is the most ready runners a kind grows to when runs come
	// faster than Size runners are refilled (each run that finds none
	// ready adds one, up to Burst; the memory cap still applies). The
	// runners above Size are stopped after Idle without such a run. At
	// most Size: no growth.
	Burst int
	// Idle stops a kind's runners when no run asked for that kind for this
	// long (0: one minute).
	Idle time.Duration
	// MemoryBytes caps the memory of all ready runners together (0: 256 MiB).
	MemoryBytes int64
	// Fills bounds concurrent runner start-ups (0: 2).
	Fills int
	// Fork serves python runs from runners forked by a fork-server (see
	// the namespace backend) where the kernel has Landlock ABI ≥ 6; false: every runner
	// starts its own interpreter.
	Fork bool
}

// PoolStat is the state of the warm runners of one kind.
type PoolStat struct {
	// Kind is "python", "node" or "bash"; Key distinguishes kinds started with
	// different flags, environment, mounts or limits.
	Kind string
	Key  string
	// Ready runners wait for a run; Starting are being started; Target is
	// how many the pool currently aims to keep (grows on misses up to
	// Burst, back to Size after Idle without one, to 0 after the idle
	// expiry).
	Ready, Starting, Target int
	// Hits are runs served warm; Misses runs that found no ready runner.
	Hits, Misses uint64
	// MemoryBytes is what the ready runners hold.
	MemoryBytes int64
}

// Pooled is implemented by backends that keep warm runners.
type Pooled interface {
	// PoolStats returns the state of every kind, sorted by kind.
	PoolStats() []PoolStat
	// PoolTallies returns how many runs of each language kind were served
	// warm and cold since the backend started.
	PoolTallies() []PoolTally
}

// PoolTally counts the runs of one kind (python, node, bash) since the backend
// started: Warm were served by a runner, Cold found none. Unlike PoolStat's
// counts they never go back: a kind that expires keeps its tally.
type PoolTally struct {
	Kind       string
	Warm, Cold uint64
}
