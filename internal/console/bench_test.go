package console_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/console"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/pgstore"
	"github.com/codexec/codexec/internal/pgtest"
	"github.com/codexec/codexec/internal/storetest"
)

// benchN is the size of the history BenchmarkHistoryPage renders from.
const benchN = 100_000

// BenchmarkHistoryPage times the server side of /console/history (the
// store's query and the page's rendering, no network) over 100,000
// executions of five principals, in the embedded index and in PostgreSQL
// (skipped when it is not installed): a principal's first page, a filtered
// page, a rare word's search, and an operator's first page. Loading is not
// timed. Run it with
//
//	go test ./internal/console -run '^$' -bench HistoryPage -benchtime 20x
func BenchmarkHistoryPage(b *testing.B) {
	now := time.Now()
	entries := storetest.Executions(benchN, now)
	for _, store := range []string{"sqlite", "postgres"} {
		b.Run(store, func(b *testing.B) {
			t0 := time.Now()
			br := seedHistory(b, store, entries)
			fmt.Fprintf(os.Stderr, "%s: %d executions loaded in %v\n", store, len(entries), time.Since(t0).Round(time.Millisecond))
			benchPages(b, br)
		})
	}
}

// seedHistory loads entries into a fresh store.
func seedHistory(b *testing.B, store string, entries []execlog.Entry) logindex.Browser {
	ctx := context.Background()
	if store == "sqlite" {
		idx, err := storetest.SeedEmbedded(ctx, filepath.Join(b.TempDir(), "logs"), entries)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = idx.Close() })
		return idx
	}
	pg := pgtest.Start(b)
	st, err := pgstore.Open(ctx, pg.NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	if err := storetest.SeedPostgres(ctx, st.History(), entries); err != nil {
		b.Fatal(err)
	}
	return st.History()
}

// benchPages renders the history pages through the console's handler.
func benchPages(b *testing.B, br logindex.Browser) {
	pages := []struct{ name, principal, path string }{
		{"first-page", "alice@example.com", "/console/history"},
		{"filtered", "alice@example.com", "/console/history?status=failed&language=python&tool=execute_code"},
		{"search-rare", "alice@example.com", "/console/history?q=" + storetest.SeedRareWord},
		{"operator-first-page", "ops", "/console/history"},
		{"operator-search-common", "ops", "/console/history?q=print"},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			c, err := console.New(console.Options{History: br, Operators: []string{"ops"}, OneTimeToken: "unused-in-benchmarks"})
			if err != nil {
				b.Fatal(err)
			}
			h := c.Handler()
			cookie := console.LoginCookie(c, p.principal)
			b.ResetTimer()
			for range b.N {
				req := httptest.NewRequest("GET", p.path, nil)
				req.AddCookie(cookie)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%s: status %d\n%s", p.path, rec.Code, rec.Body.String())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}
