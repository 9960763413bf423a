// Package runreport says how a run ended and what it cost, from what the
// engine, the session manager and the sandbox backend know: the end reason
// (a closed set next to a result's status, which keeps its meaning) and
// the usage record (CPU, memory, processes, bytes written and sent, the
// sandbox path, and how each was measured). A value that was not measured
// is absent, never a zero standing in for "unknown".
package runreport

// End reasons: why a run ended (Result.EndReason), a closed set. Status
// keeps its own meaning; the end reason says what stopped the program.
// Output over the limit is truncated, never a reason to stop a run, so
// there is no output end reason.
const (
	// Exit: the program exited by itself, with any exit code.
	Exit = "exit"
	// Signal: a signal killed the program (its own, or another
	// process's), not codexec's timeout or cancellation.
	Signal = "signal"
	// OOM: the memory limit killed it.
	OOM = "oom"
	// Timeout: the timeout stopped it.
	Timeout = "timeout"
	// Cancelled: the caller cancelled it (or went away, or cancel_run).
	Cancelled = "cancelled"
	// DiskFull: it failed with its bounded disk full.
	DiskFull = "disk_full"
	// Lost: what ran it went away before it ended: a session's
	// interpreter died, or a background run's server.
	Lost = "lost"
	// NotStarted: the program never started (setup error, TypeScript
	// that did not compile, a sandbox that could not start).
	NotStarted = "not_started"
)

// Reasons is the closed set of end reasons, in the order documented.
var Reasons = []string{Exit, Signal, OOM, Timeout, Cancelled, DiskFull, Lost, NotStarted}

// Facts is what the engine and the session manager know about how a
// run ended; EndReason derives the one reason from them.
type Facts struct {
	NotStarted bool
	Cancelled  bool
	TimedOut   bool
	Lost       bool
	OOMKilled  bool
	DiskFull   bool
	// Signal is the signal that ended the program, 0 for none.
	Signal int
}

// Reason is why a run with facts f ended. The stop codexec made
// (cancellation, timeout) comes before the kill it caused, and a limit
// before the signal or failure it caused: a cancelled run is cancelled
// even though a signal killed it; a program killed for its memory is oom.
func Reason(f Facts) string {
	switch {
	case f.Cancelled:
		return Cancelled
	case f.NotStarted:
		return NotStarted
	case f.TimedOut:
		return Timeout
	case f.Lost:
		return Lost
	case f.OOMKilled:
		return OOM
	case f.DiskFull:
		return DiskFull
	case f.Signal != 0:
		return Signal
	}
	return Exit
}
