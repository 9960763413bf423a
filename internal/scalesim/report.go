package scalesim

import (
	"fmt"
	"slices"
	"strings"
)

// Table renders the reported phases of r (all but the warm-up) as a
// Markdown table: one row per measure, one column per phase. Counts are
// totals over the phase; "/s" rows are per second of it.
func Table(r Result) string {
	var ph []Phase
	for _, p := range r.Phases {
		if p.Name != PhaseWarmup {
			ph = append(ph, p)
		}
	}
	var b strings.Builder
	row := func(name string, f func(p Phase) string) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, p := range ph {
			fmt.Fprintf(&b, " %s |", f(p))
		}
		b.WriteString("\n")
	}
	rate := func(n int, p Phase) string {
		if v := float64(n) / p.Seconds(); v < 1 && v > 0 {
			return fmt.Sprintf("%.3f", v)
		}
		return fmt.Sprintf("%.1f", float64(n)/p.Seconds())
	}
	row("measure", func(p Phase) string { return p.Name })
	b.WriteString("|---|" + strings.Repeat("---:|", len(ph)) + "\n")
	row("length (s)", func(p Phase) string { return fmt.Sprintf("%.0f", p.Seconds()) })
	row("tool calls /s", func(p Phase) string { return rate(p.Calls, p) })
	row("answered with a result", func(p Phase) string { return fmt.Sprint(p.Succeeded) })
	row("of which forwarded (1 hop)", func(p Phase) string { return pct(p.Forwarded, p.Succeeded) })
	for _, k := range failKinds(ph) {
		row("failed: "+k, func(p Phase) string { return fmt.Sprint(p.Failed[k]) })
	}
	row("MCP sessions reopened after 404", func(p Phase) string { return fmt.Sprint(p.Reinits) })
	row("sessions marked lost", func(p Phase) string { return fmt.Sprint(p.Lost) })
	row(`calls answered "session lost"`, func(p Phase) string { return fmt.Sprint(p.LostTold) })
	row("sessions started", func(p Phase) string { return fmt.Sprint(p.Started) })
	for _, op := range Ops {
		row("registry "+op+" /s", func(p Phase) string { return rate(p.Ops[op], p) })
	}
	if r.PeakCheckpointBytes > 0 {
		row("registry "+OpPause+" /s", func(p Phase) string { return rate(p.Ops[OpPause], p) })
	}
	if r.PeakCheckpointBytes > 0 {
		row("sessions paused (of which at drain)", func(p Phase) string { return fmt.Sprintf("%d (%d)", p.Paused, p.PausedAtDrain) })
		row("paused sessions resumed (of which elsewhere)", func(p Phase) string { return fmt.Sprintf("%d (%d)", p.Resumed, p.ResumedElsewhere) })
		row("paused sessions closed", func(p Phase) string { return fmt.Sprint(p.ClosedPaused) })
		row("automatic checkpoints /s", func(p Phase) string { return rate(p.Auto, p) })
		row("S3 checkpoint PUT /s", func(p Phase) string { return rate(p.BlobPuts, p) })
		row("S3 checkpoint GET /s", func(p Phase) string { return rate(p.BlobGets, p) })
		row("S3 checkpoint DELETE /s", func(p Phase) string { return rate(p.BlobDeletes, p) })
		row("S3 MB written /s", func(p Phase) string { return mb(p.BlobPuts, r.CheckpointBytes, p) })
		row("checkpoint record statements /s", func(p Phase) string { return rate(p.RecordStatements, p) })
	}
	row("history appends /s", func(p Phase) string { return rate(p.HistoryAppends, p) })
	row("script reads /s", func(p Phase) string { return rate(p.ScriptReads, p) })
	row("**PostgreSQL statements /s**", func(p Phase) string { return "**" + rate(p.StoreStatements(), p) + "**" })
	fmt.Fprintf(&b, "\nmax forwarding hops: %d; node loss: the killed replica held %d sessions, marked lost %v after the kill (bound %v); stick table entries at the end: %d\n",
		r.MaxHops, r.HeldAtKill, r.Detection, r.DetectionBound, r.StickEntries)
	if r.PeakCheckpointBytes > 0 {
		fmt.Fprintf(&b, "checkpoints in the bucket at most: %.1f GiB (CODEXEC_CHECKPOINT_MAX_TOTAL must allow it)\n", float64(r.PeakCheckpointBytes)/(1<<30))
	}
	return b.String()
}

// mb is n checkpoints of size bytes per second of p, in MB.
func mb(n int, size int64, p Phase) string {
	return fmt.Sprintf("%.1f", float64(n)*float64(size)/1e6/p.Seconds())
}

func pct(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

func failKinds(ph []Phase) []string {
	var ks []string
	for _, p := range ph {
		for k := range p.Failed {
			if !slices.Contains(ks, k) {
				ks = append(ks, k)
			}
		}
	}
	slices.Sort(ks)
	return ks
}
