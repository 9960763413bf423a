package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
)

// BenchmarkHistory measures one append and the common searches on each
// store holding 1,920 executions. The shared store pays one round trip per
// append (indexing included) and two per search; the embedded append is
// the JSONL write only (the index catches up before the next search).
func BenchmarkHistory(b *testing.B) {
	for _, bk := range backends() {
		b.Run(bk.name, func(b *testing.B) {
			h := bk.open(b).history
			ctx := context.Background()
			for _, e := range history(time.Now()) {
				id := e.ExecutionID
				for i := range 12 {
					e.ExecutionID = fmt.Sprintf("%s_%d", id, i)
					if err := h.Append(ctx, e); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.Run("append", func(b *testing.B) {
				for i := range b.N {
					e := execlog.Entry{ExecutionID: fmt.Sprintf("exec_bench%d", i), Language: "python", Status: "success",
						Code: "print('bench')", Stdout: "bench\n", ExecutedAt: time.Now()}
					if err := h.Append(ctx, e); err != nil {
						b.Fatal(err)
					}
				}
			})
			for _, c := range []struct {
				name string
				q    logindex.Query
			}{{"search-newest", logindex.Query{}}, {"search-text", logindex.Query{Text: "print"}},
				{"search-status-language", logindex.Query{Status: "failed", Language: "python"}}} {
				b.Run(c.name, func(b *testing.B) {
					for range b.N {
						if _, _, err := h.Search(ctx, c.q); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
