package runreport

import (
	"strings"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/proc"
)

// Usage is what one run cost, as measured (execlog.Usage: results and log
// entries carry the same record).
type Usage = execlog.Usage

// FromExit is what ex says the run used, nil when the backend measured
// nothing.
func FromExit(ex proc.Exit) *Usage {
	u := &Usage{Sandbox: ex.Usage.Path, ProcessesPeak: ex.Usage.ProcessesPeak}
	var from []string
	if ex.Usage.CPUFrom != "" {
		user, sys := ex.Usage.CPUUser.Milliseconds(), ex.Usage.CPUSystem.Milliseconds()
		u.CPUUserMs, u.CPUSystemMs = &user, &sys
		from = append(from, ex.Usage.CPUFrom)
	}
	switch {
	case ex.MemoryPeakBytes > 0:
		u.MemoryPeakBytes = ex.MemoryPeakBytes
		from = append(from, proc.FromCgroup)
	case ex.Usage.RusageMaxRSS > 0:
		u.MemoryPeakBytes = ex.Usage.RusageMaxRSS
		from = append(from, proc.FromRusage)
	}
	if u.ProcessesPeak > 0 {
		from = append(from, proc.FromCgroup)
	}
	u.Source = sourceOf(from)
	if *u == (Usage{}) {
		return nil
	}
	return u
}

// sourceOf names the distinct sources in from, cgroup first.
func sourceOf(from []string) string {
	var out []string
	for _, s := range []string{proc.FromCgroup, proc.FromRusage} {
		for _, f := range from {
			if f == s {
				out = append(out, s)
				break
			}
		}
	}
	return strings.Join(out, "+")
}

// WithWritten adds the bytes the run wrote to its working directory.
func WithWritten(u *Usage, n int64) *Usage {
	if u == nil {
		u = &Usage{}
	}
	u.WrittenBytes = &n
	return u
}

// WithNetwork adds the bytes of the egress audit's entries, if any.
func WithNetwork(u *Usage, entries []egress.Entry) *Usage {
	if len(entries) == 0 {
		return u
	}
	var n int64
	for _, e := range entries {
		n += e.BytesSent + e.BytesReceived
	}
	if u == nil {
		u = &Usage{}
	}
	u.NetworkBytes = &n
	return u
}

// Session is the usage of a run in a session's interpreter, which
// lives across runs: what the run itself wrote and sent (CPU and memory,
// where the interpreter's sandbox can read them, come from Between).
func Session(written int64, network []egress.Entry) *Usage {
	return WithNetwork(WithWritten(nil, written), network)
}

// Between adds to u what two readings of a session's interpreter's
// counters, before and after one run, say the run used: the CPU time
// between them, and the interpreter's peak memory between them when the
// first reading restarted it (the interpreter's whole memory, state of
// earlier runs included). A counter that went back (a new interpreter)
// is left out.
func Between(u *Usage, before, after proc.Reading) *Usage {
	if u == nil {
		u = &Usage{}
	}
	measured := false
	if before.CPUKnown && after.CPUKnown && after.CPUUser >= before.CPUUser && after.CPUSystem >= before.CPUSystem {
		user, sys := (after.CPUUser - before.CPUUser).Milliseconds(), (after.CPUSystem - before.CPUSystem).Milliseconds()
		u.CPUUserMs, u.CPUSystemMs, measured = &user, &sys, true
	}
	if before.PeakReset && after.MemoryPeak > 0 {
		u.MemoryPeakBytes, measured = after.MemoryPeak, true
	}
	if measured {
		u.Source = proc.FromCgroup
	}
	return u
}
