package storetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/tenant"
)

// browseBenchN is the size of the history BenchmarkBrowse reads.
const browseBenchN = 100_000

// BenchmarkBrowse times what the console asks of each store holding
// 100,000 executions of five principals (Executions): the first page of a
// principal's history, filtered pages, a text search, a page deep in the
// history through a cursor, an operator's pages, and overviews of a day
// and a week. Loading is not timed (it is printed). Run it with
//
//	go test ./internal/storetest -run '^$' -bench Browse -benchtime 100x
func BenchmarkBrowse(b *testing.B) {
	now := time.Now()
	entries := Executions(browseBenchN, now)
	for _, bk := range backends() {
		b.Run(bk.name, func(b *testing.B) {
			t0 := time.Now()
			br := seedBench(b, bk, entries)
			fmt.Fprintf(os.Stderr, "%s: %d executions loaded and indexed in %v\n", bk.name, len(entries), time.Since(t0).Round(time.Millisecond))
			benchBrowse(b, br, now)
		})
	}
}

// seedBench loads entries into a fresh store of bk.
func seedBench(b *testing.B, bk backend, entries []execlog.Entry) logindex.Browser {
	ctx := context.Background()
	if bk.name == "embedded" {
		idx, err := SeedEmbedded(ctx, filepath.Join(b.TempDir(), "logs"), entries)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = idx.Close() })
		return idx
	}
	st := bk.open(b)
	if err := SeedPostgres(ctx, st.pg, entries); err != nil {
		b.Fatal(err)
	}
	return st.pg
}

func benchBrowse(b *testing.B, br logindex.Browser, now time.Time) {
	alice := tenant.With(context.Background(), SeedPrincipals[1])
	all := logindex.Scope{All: true}
	deep := logindex.EncodeCursor(logindex.TimeKey(now.Add(-SeedSpan / 2)))
	pages := []struct {
		name string
		f    logindex.Filter
	}{
		{"first-page", logindex.Filter{}},
		{"filter-status-language", logindex.Filter{Query: logindex.Query{Status: "failed", Language: "python"}}},
		{"filter-tool", logindex.Filter{Tool: "run_script"}},
		{"filter-session", logindex.Filter{SessionID: "sess_seed00042"}},
		{"text-rare", logindex.Filter{Query: logindex.Query{Text: SeedRareWord}}},
		{"text-common", logindex.Filter{Query: logindex.Query{Text: "print"}}},
		{"deep-page", logindex.Filter{Cursor: deep}},
		{"all-first-page", logindex.Filter{Scope: all}},
		{"all-filter-status-tool", logindex.Filter{Scope: all, Query: logindex.Query{Status: "timeout"}, Tool: "execute_command"}},
		{"all-deep-page", logindex.Filter{Scope: all, Cursor: deep}},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			withCPU(b, func() {
				pg, err := br.Browse(alice, p.f)
				if err != nil || len(pg.Rows) == 0 {
					b.Fatalf("%d rows, err %v", len(pg.Rows), err)
				}
			})
		})
	}
	windows := []struct {
		name string
		w    logindex.Window
	}{
		{"overview-24h", logindex.Window{Since: now.Add(-24 * time.Hour), Until: now}},
		{"overview-7d", logindex.Window{Since: now.AddDate(0, 0, -7), Until: now}},
		{"all-overview-24h", logindex.Window{Scope: all, Since: now.Add(-24 * time.Hour), Until: now}},
		{"all-overview-7d", logindex.Window{Scope: all, Since: now.AddDate(0, 0, -7), Until: now}},
	}
	for _, w := range windows {
		b.Run(w.name, func(b *testing.B) {
			withCPU(b, func() {
				o, err := br.Overview(alice, w.w)
				if err != nil || o.Runs == 0 {
					b.Fatalf("%d runs, err %v", o.Runs, err)
				}
			})
		})
	}
}

// withCPU runs fn b.N times and reports, beside the wall time, the CPU
// time this process spent per call (user and system): on a machine shared
// with other work the wall time includes waiting for a CPU, the CPU time
// does not. For PostgreSQL most of the work is the server's, not counted.
func withCPU(b *testing.B, fn func()) {
	before := cpuTime()
	b.ResetTimer()
	for range b.N {
		fn()
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-before).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
