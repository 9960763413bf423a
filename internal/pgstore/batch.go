package pgstore

import (
	"context"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/jackc/pgx/v5"
)

// AppendBatch records many executions at once (an import, a benchmark's
// history) with Append's rules: an entry whose id is recorded, or appears
// earlier in entries, is ignored; entries sharing an ordering key take the
// next free ones in order. It copies them into a staging table in one
// round trip and inserts them from there, so 100,000 entries take seconds
// where one Append each would take minutes. Entries whose key a recorded
// execution holds are appended one by one afterwards (so, within their
// millisecond, they may order differently than had each been appended in
// turn).
func (h *History) AppendBatch(ctx context.Context, entries []execlog.Entry) error {
	rows, byID, err := batchRows(entries, time.Now().UTC())
	if err != nil {
		return err
	}
	var left []string
	err = pgx.BeginFunc(ctx, h.s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE executions_load (rid bigint, id text, owner text, session_id text,
			language text, status text, exit_code integer, duration_ms bigint, executed_at bigint, code_preview text,
			error_preview text, words text[], entry text, written_at timestamptz, tool text, end_reason text, sandbox text,
			denied_hosts text[]) ON COMMIT DROP`); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"executions_load"}, loadColumns(), pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO executions (`+recordColumns+`) SELECT `+
			strings.Replace(recordColumns, "words", "array_to_tsvector(words)", 1)+
			` FROM executions_load ORDER BY rid ON CONFLICT DO NOTHING`); err != nil {
			return err
		}
		r, _ := tx.Query(ctx, `SELECT l.id FROM executions_load l WHERE NOT EXISTS (SELECT 1 FROM executions x WHERE x.id = l.id)`)
		left, err = pgx.CollectRows(r, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return ctxOr(ctx, err)
	}
	for _, id := range left {
		if err := h.Append(ctx, byID[id]); err != nil {
			return err
		}
	}
	if len(rows) >= analyzeRows {
		if _, err := h.s.pool.Exec(ctx, `VACUUM (ANALYZE) executions`); err != nil {
			return ctxOr(ctx, err)
		}
	}
	return nil
}

// analyzeRows is the batch size from which AppendBatch vacuums the table
// itself, as autovacuum would a while later: the planner's statistics
// count the new rows, and their pages are marked all-visible so counts
// and the console's overview read indexes alone.
const analyzeRows = 10000

// batchRows are the staging rows of entries: the first of each id, keys
// made distinct in order. byID maps ids to their entries.
func batchRows(entries []execlog.Entry, now time.Time) ([][]any, map[string]execlog.Entry, error) {
	byID := make(map[string]execlog.Entry, len(entries))
	taken := make(map[int64]bool, len(entries))
	rows := make([][]any, 0, len(entries))
	for _, e := range entries {
		r, ok, err := recordOf(e)
		if err != nil {
			return nil, nil, err
		}
		if _, dup := byID[r.f.ExecutionID]; !ok || dup {
			continue
		}
		byID[r.f.ExecutionID] = e
		key := r.f.Key
		for taken[key] {
			key++
		}
		taken[key] = true
		rows = append(rows, r.values(key, now))
	}
	return rows, byID, nil
}

// loadColumns are recordColumns as names.
func loadColumns() []string {
	cols := strings.Split(recordColumns, ",")
	for i, c := range cols {
		cols[i] = strings.TrimSpace(c)
	}
	return cols
}
