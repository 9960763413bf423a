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
}
