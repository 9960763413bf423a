package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/jackc/pgx/v5"
)

var _ logindex.Browser = (*History)(nil)

// Browse implements logindex.Browser with the embedded index's semantics:
// Search's conditions (owner dropped for Scope.All), tool, session, until
// and the cursor (rid below the last row's), newest first along an index
// ending with rid (migration 005).
func (h *History) Browse(ctx context.Context, f logindex.Filter) (logindex.Page, error) {
	after, err := logindex.ValidateFilter(f)
	if err != nil {
		return logindex.Page{}, err
	}
	owner, all := f.Resolve(ctx)
	where, args, ok := h.where(f.Query, owner, all)
	p := logindex.Page{Rows: []logindex.Row{}}
	if !ok {
		return p, nil
	}
	add := func(cond string, v any) {
		args = append(args, v)
		where += fmt.Sprintf(" AND "+cond, len(args))
	}
	if f.Tool != "" {
		add("tool = $%d", f.Tool)
	}
	if f.SessionID != "" {
		add("session_id = $%d", f.SessionID)
	}
	if !f.Until.IsZero() {
		add("rid < $%d", logindex.TimeKey(f.Until))
	}
	if err := h.s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM executions`+where+
		fmt.Sprintf(` LIMIT %d) m`, logindex.BrowseCountCap+1), custom(args)...).Scan(&p.Total); err != nil {
		return logindex.Page{}, ctxOr(ctx, err)
	}
	if after > 0 {
		add("rid < $%d", after)
	}
	return h.page(ctx, p, where, args, f.PageSize())
}

// page reads one more row than limit, to know whether a next page exists.
func (h *History) page(ctx context.Context, p logindex.Page, where string, args []any, limit int) (logindex.Page, error) {
	rows, _ := h.s.pool.Query(ctx, `SELECT rid, id, session_id, language, code_preview, status, exit_code, error_preview,
		duration_ms, executed_at, tool, owner, end_reason, sandbox, cardinality(denied_hosts) FROM executions`+where+
		fmt.Sprintf(` ORDER BY rid DESC LIMIT %d`, limit+1), custom(args)...)
	var last int64
	for rows.Next() {
		if len(p.Rows) == limit {
			p.Next = logindex.EncodeCursor(last)
			break
		}
		var r logindex.Row
		var at int64
		if err := rows.Scan(&last, &r.ExecutionID, &r.SessionID, &r.Language, &r.CodePreview, &r.Status, &r.ExitCode,
			&r.ErrorPreview, &r.DurationMs, &at, &r.Tool, &r.Owner, &r.EndReason, &r.Sandbox, &r.Denied); err != nil {
			rows.Close()
			return logindex.Page{}, ctxOr(ctx, err)
		}
		r.ExecutedAt = time.UnixMilli(at).UTC()
		p.Rows = append(p.Rows, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return logindex.Page{}, ctxOr(ctx, err)
	}
	return p, nil
}

// Inspect implements logindex.Browser: Get within scope.
func (h *History) Inspect(ctx context.Context, id string, scope logindex.Scope) (execlog.Entry, error) {
	owner, all := scope.Resolve(ctx)
	return h.get(ctx, id, owner, all)
}

// Overview implements logindex.Browser with three aggregate queries over
// the window's rid range, index-only on a vacuumed table (executions_owner,
// executions_window): counts by bucket, status and sandbox, the durations'
// histogram for the percentiles, and the most refused hosts.
func (h *History) Overview(ctx context.Context, w logindex.Window) (logindex.Overview, error) {
	w, err := w.Normalize(time.Now())
	if err != nil {
		return logindex.Overview{}, err
	}
	owner, all := w.Resolve(ctx)
	from, until, bucket := w.Keys()
	scope, args := "rid >= $1 AND rid < $2", []any{from, until}
	if !all {
		scope, args = scope+" AND owner = $3", append(args, owner)
	}
	o := logindex.NewOverview(w)
	n := len(args)
	if err := h.countWindow(ctx, &o, fmt.Sprintf(`SELECT (rid - $%d) / $%d, status, sandbox, count(*),
		sum(cardinality(denied_hosts)) FROM executions WHERE %s GROUP BY 1, 2, 3`, n+1, n+2, scope),
		append(args, from, bucket)); err != nil {
		return logindex.Overview{}, err
	}
	if o.Runs == 0 {
		return o, nil
	}
	if err := h.percentiles(ctx, &o, scope, args); err != nil {
		return logindex.Overview{}, err
	}
	rows, _ := h.s.pool.Query(ctx, `SELECT d.host, count(*) FROM executions, unnest(denied_hosts) AS d(host)
		WHERE `+scope+fmt.Sprintf(` AND cardinality(denied_hosts) > 0 GROUP BY d.host ORDER BY 2 DESC, d.host COLLATE "C" LIMIT %d`,
		logindex.TopHosts), custom(args)...)
	hosts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (logindex.HostCount, error) {
		var c logindex.HostCount
		return c, r.Scan(&c.Host, &c.Count)
	})
	if err != nil {
		return logindex.Overview{}, ctxOr(ctx, err)
	}
	o.DeniedHosts = append(o.DeniedHosts, hosts...)
	return o, nil
}

// countWindow adds the counts q selects (bucket, status, sandbox, count,
// refused hosts) to o.
func (h *History) countWindow(ctx context.Context, o *logindex.Overview, q string, args []any) error {
	rows, _ := h.s.pool.Query(ctx, q, custom(args)...)
	defer rows.Close()
	for rows.Next() {
		var i, n, denied int64
		var status, sandbox string
		if err := rows.Scan(&i, &status, &sandbox, &n, &denied); err != nil {
			return ctxOr(ctx, err)
		}
		o.Add(i, status, sandbox, int(n), int(denied))
	}
	if err := rows.Err(); err != nil {
		return ctxOr(ctx, err)
	}
	return nil
}

// percentiles sets o's P50 and P90 from the histogram of the window's
// durations.
func (h *History) percentiles(ctx context.Context, o *logindex.Overview, scope string, args []any) error {
	rows, _ := h.s.pool.Query(ctx, `SELECT duration_ms, count(*) FROM executions WHERE `+scope+` GROUP BY 1`, custom(args)...)
	defer rows.Close()
	hist := map[int64]int{}
	for rows.Next() {
		var ms, n int64
		if err := rows.Scan(&ms, &n); err != nil {
			return ctxOr(ctx, err)
		}
		hist[ms] = int(n)
	}
	if err := rows.Err(); err != nil {
		return ctxOr(ctx, err)
	}
	o.SetPercentiles(hist)
	return nil
}

var _ logindex.ValueLister = (*History)(nil)

// Values implements logindex.ValueLister over the indexes leading with
// owner and language or tool (a principal's) or with language or tool
// (everyone's).
func (h *History) Values(ctx context.Context, scope logindex.Scope) (logindex.Values, error) {
	owner, all := scope.Resolve(ctx)
	cond, args := "owner = $1", []any{owner}
	if all {
		cond, args = "", nil
	}
	var v logindex.Values
	for _, c := range []struct {
		column string
		out    *[]string
	}{{"language", &v.Languages}, {"tool", &v.Tools}} {
		rows, _ := h.s.pool.Query(ctx, logindex.DistinctSQL("executions", c.column, cond), args...)
		vals, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return logindex.Values{}, ctxOr(ctx, err)
		}
		*c.out = append([]string{}, vals...)
	}
	return v, nil
}

// custom makes a query planned for its arguments every time (an unnamed
// statement) rather than by a cached generic plan: how many executions a
// word, an owner or a window selects decides between walking an index
// newest first and collecting the matches, and a generic plan cannot
// tell (measured: a common word's page took 150 ms on a generic plan
// against 1 ms on its own).
func custom(args []any) []any { return append([]any{pgx.QueryExecModeExec}, args...) }
