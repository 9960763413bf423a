package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/pgstore"
	"github.com/codexec/codexec/internal/tenant"
)

// SeedPrincipals are the principals of Executions' history, most active
// first: the local one (whose entries carry no owner) and four tenants.
var SeedPrincipals = []string{tenant.Local, "alice@example.com", "bob@example.com", "carol@example.com", "dave@example.com"}

// SeedRareWord occurs in the code of about one execution in 200 of
// Executions' history, for a text search with few matches; "print" is in
// most.
const SeedRareWord = "needle_in_haystack"

// SeedSpan is how far back Executions' history reaches.
const SeedSpan = 14 * 24 * time.Hour

// Executions returns n executions ending at now and spread evenly over
// SeedSpan before it, the same for the same n and now: SeedPrincipals
// (the first with 40%), statuses (75% success, 18% errors, timeouts,
// cancellations, lost runs), four languages, the tools that record
// executions, one in four in one of n/50 sessions, sandboxes warm, forked
// or cold, and one in ten with a network audit, a third of those refused
// one or two of a few hosts. Each is about 300 bytes of JSON.
func Executions(n int, now time.Time) []execlog.Entry {
	r := rand.New(rand.NewPCG(uint64(n), 41))
	out := make([]execlog.Entry, n)
	step := SeedSpan / time.Duration(max(n, 1))
	for i := range out {
		at := now.Add(-time.Duration(n-i)*step + time.Duration(r.Int64N(int64(step)))).UTC().Truncate(time.Millisecond)
		out[i] = seedEntry(r, i, n, at)
	}
	return out
}

var (
	seedLangs    = []string{"python", "python", "python", "python", "python", "node", "node", "bash", "bash", "typescript"}
	seedTools    = []string{"execute_code", "execute_code", "execute_code", "execute_code", "send_to_session", "execute_command", "run_script", "install_package"}
	seedSandbox  = []string{"warm", "warm", "warm", "warm", "forked", "forked", "cold"}
	seedHosts    = []string{"pypi.org", "files.pythonhosted.org", "api.github.com", "evil.example", "169.254.169.254", "tracker.example.net", "registry.npmjs.org"}
	seedWords    = []string{"import", "pandas", "numpy", "df", "describe", "json", "requests", "range", "sum", "plot", "fetch", "console", "ls", "grep"}
	seedStatuses = []struct {
		status, reason string
		weight         int
	}{{"success", "exit", 750}, {"execution_error", "exit", 150}, {"execution_error", "signal", 20}, {"execution_error", "oom", 10},
		{"timeout", "timeout", 30}, {"cancelled", "cancelled", 20}, {"lost", "lost", 10}, {"setup_error", "not_started", 10}}
)

// seedEntry is execution i of n, at at.
func seedEntry(r *rand.Rand, i, n int, at time.Time) execlog.Entry {
	e := execlog.Entry{ExecutionID: fmt.Sprintf("exec_seed%08d", i), Language: seedLangs[r.IntN(len(seedLangs))],
		Tool: seedTools[r.IntN(len(seedTools))], DurationMs: int64(r.ExpFloat64() * 400), ExecutedAt: at,
		SandboxMode: "subprocess", Usage: &execlog.Usage{Sandbox: seedSandbox[r.IntN(len(seedSandbox))]}}
	if p := r.IntN(10); p < 4 {
		e.Owner = "" // the local principal's entries carry no owner
	} else {
		e.Owner = SeedPrincipals[1+p%4]
	}
	words := make([]string, 6)
	for j := range words {
		words[j] = seedWords[r.IntN(len(seedWords))]
	}
	if r.IntN(200) == 0 {
		words[2] = SeedRareWord
	}
	e.Code = strings.Join(words, " ") + fmt.Sprintf("\nprint(%d)", i)
	e.Stdout = fmt.Sprintf("%d rows\n", r.IntN(5000))
	seedStatus(r, &e)
	if r.IntN(4) == 0 {
		sid := fmt.Sprintf("sess_seed%05d", r.IntN(max(n/50, 1)))
		e.SessionID, e.Tool = &sid, "send_to_session"
	}
	if r.IntN(10) == 0 {
		e.Network = seedNetwork(r)
	}
	return e
}

// seedStatus draws e's status, end reason, exit code and error output.
func seedStatus(r *rand.Rand, e *execlog.Entry) {
	w := r.IntN(1000)
	s := seedStatuses[0]
	for _, c := range seedStatuses {
		if w < c.weight {
			s = c
			break
		}
		w -= c.weight
	}
	e.Status, e.EndReason = s.status, s.reason
	code := 0
	if s.status != "success" {
		code = 1
		e.Stderr = "Traceback (most recent call last):\nValueError: bad input " + seedWords[r.IntN(len(seedWords))]
	}
	if s.status == "timeout" {
		e.TimedOut, e.DurationMs = true, 30_000
	}
	e.ExitCode = &code
}

// seedNetwork is a network audit: an allowed host, and a third of the
// time one or two refused ones.
func seedNetwork(r *rand.Rand) []egress.Entry {
	out := []egress.Entry{{Host: seedHosts[r.IntN(3)], Port: 443, Allowed: true, Connections: 1 + r.IntN(5)}}
	if r.IntN(3) == 0 {
		for range 1 + r.IntN(2) {
			out = append(out, egress.Entry{Host: seedHosts[3+r.IntN(4)], Port: 443, Reason: "not in policy", Connections: 1})
		}
	}
	return out
}

// SeedEmbedded writes entries to the JSONL history of logDir (as the
// server does, through execlog) and indexes it, returning the index, which
// the caller closes. 100,000 entries take tens of seconds on a small
// machine, mostly indexing.
func SeedEmbedded(ctx context.Context, logDir string, entries []execlog.Entry) (_ *logindex.Index, retErr error) {
	log, err := execlog.New(logDir)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	for _, e := range entries {
		if err := log.AppendExecution(e); err != nil {
			return nil, err
		}
	}
	idx, err := logindex.Open(logDir, filepath.Join(logDir, logindex.FileName))
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			_ = idx.Close()
		}
	}()
	return idx, idx.Sync(ctx, true)
}

// SeedPostgres appends entries to h in bulk (AppendBatch).
func SeedPostgres(ctx context.Context, h *pgstore.History, entries []execlog.Entry) error {
	return h.AppendBatch(ctx, entries)
}
