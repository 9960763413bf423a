package engine

// End reasons: why a run ended (Result.EndReason), a closed set. Status
// keeps its own meaning; the end reason says what stopped the program.
// Output over the limit is truncated, never a reason to stop a run, so
// there is no output end reason.
const (
	// EndExit: the program exited by itself, with any exit code.
	EndExit = "exit"
	// EndSignal: a signal killed the program (its own, or another
	// process's), not codexec's timeout or cancellation.
	EndSignal = "signal"
	// EndOOM: the memory limit killed it.
	EndOOM = "oom"
	// EndTimeout: the timeout stopped it.
	EndTimeout = "timeout"
	// EndCancelled: the caller cancelled it (or went away, or cancel_run).
	EndCancelled = "cancelled"
	// EndDiskFull: it failed with its bounded disk full.
	EndDiskFull = "disk_full"
	// EndLost: what ran it went away before it ended: a session's
	// interpreter died, or a background run's server.
	EndLost = "lost"
	// EndNotStarted: the program never started (setup error, TypeScript
	// that did not compile, a sandbox that could not start).
	EndNotStarted = "not_started"
)

// EndReasons is the closed set of end reasons, in the order documented.
var EndReasons = []string{EndExit, EndSignal, EndOOM, EndTimeout, EndCancelled, EndDiskFull, EndLost, EndNotStarted}

// EndFacts is what the engine and the session manager know about how a
// run ended; EndReason derives the one reason from them.
type EndFacts struct {
	NotStarted bool
	Cancelled  bool
	TimedOut   bool
	Lost       bool
	OOMKilled  bool
	DiskFull   bool
	// Signal is the signal that ended the program, 0 for none.
	Signal int
}

// EndReason is why a run with facts f ended. The stop codexec made
// (cancellation, timeout) comes before the kill it caused, and a limit
// before the signal or failure it caused: a cancelled run is cancelled
// even though a signal killed it; a program killed for its memory is oom.
func EndReason(f EndFacts) string {
	switch {
	case f.Cancelled:
		return EndCancelled
	case f.NotStarted:
		return EndNotStarted
	case f.TimedOut:
		return EndTimeout
	case f.Lost:
		return EndLost
	case f.OOMKilled:
		return EndOOM
	case f.DiskFull:
		return EndDiskFull
	case f.Signal != 0:
		return EndSignal
	}
	return EndExit
}

// Ended records f as res's end facts and sets its end reason from them:
// the one place a result's end reason is set (a later fact, such as a full
// disk, is added to res.End and passed here again).
func Ended(res Result, f EndFacts) Result {
	res.End = f
	res.EndReason = EndReason(f)
	return res
}
