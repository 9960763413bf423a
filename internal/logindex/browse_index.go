package logindex

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/execlog"
)

var _ Browser = (*Index)(nil)

// Browse implements Browser: Search's conditions (owner dropped for
// Scope.All) plus tool, session, until and the cursor, all walking an
// index in rowid order so a page costs its rows, not the history's size.
func (x *Index) Browse(ctx context.Context, f Filter) (Page, error) {
	after, err := ValidateFilter(f)
	if err != nil {
		return Page{}, err
	}
	owner, all := f.Resolve(ctx)
	from, conds, args, err := f.Query.conds(owner, all, f.Tool)
	if err != nil {
		return Page{}, err
	}
	key := "e.rid"
	if from == ftsFrom {
		key = "f.rowid" // FTS5 walks its doclists by rowid: no sort
	}
	conds, args = f.moreConds(key, conds, args)
	if err := x.Sync(ctx, false); err != nil {
		return Page{}, x.unavailable(err)
	}
	p, err := x.browse(ctx, from, key, conds, args, after, f.PageSize())
	if err != nil && ctx.Err() == nil {
		return Page{}, x.unavailable(err)
	}
	return p, err
}

// moreConds adds the conditions Browse has beyond Search's.
// The tool is compared exactly even where its FTS token (which ignores
// case) already narrowed the matches.
func (f Filter) moreConds(key string, conds []string, args []any) ([]string, []any) {
	if f.Tool != "" {
		conds, args = append(conds, "e.tool = ?"), append(args, f.Tool)
	}
	if f.SessionID != "" {
		conds, args = append(conds, "e.session_id = ?"), append(args, f.SessionID)
	}
	if !f.Until.IsZero() {
		conds, args = append(conds, key+" < ?"), append(args, TimeKey(f.Until))
	}
	return conds, args
}

// whereClause is " WHERE conds" or "" when there are none.
func whereClause(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// browse runs the count and the page (one row more than limit, to know
// whether a next page exists) of Browse.
func (x *Index) browse(ctx context.Context, from, key string, conds []string, args []any, after int64, limit int) (Page, error) {
	db, err := x.conn()
	if err != nil {
		return Page{}, err
	}
	p := Page{Rows: []Row{}}
	countFrom := from
	if from == ftsFrom && !strings.Contains(strings.Join(conds, " "), "e.") {
		countFrom = "execs_fts f" // every condition is on the FTS table: skip the join
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM `+countFrom+whereClause(conds)+` LIMIT ?)`,
		append(args, BrowseCountCap+1)...).Scan(&p.Total); err != nil {
		return Page{}, err
	}
	if after > 0 {
		conds, args = append(conds, key+" < ?"), append(args, after)
	}
	rows, err := db.QueryContext(ctx, `SELECT e.rid, e.id, e.session_id, e.language, e.code_preview, e.status, e.exit_code,
		e.error_preview, e.duration_ms, e.executed_at, e.tool, e.owner, e.end_reason, e.sandbox, e.denied FROM `+
		from+whereClause(conds)+` ORDER BY `+key+` DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return Page{}, err
	}
	defer rows.Close()
	var last int64
	for rows.Next() {
		if len(p.Rows) == limit {
			p.Next = EncodeCursor(last)
			break
		}
		r, rid, err := scanRow(rows)
		if err != nil {
			return Page{}, err
		}
		p.Rows, last = append(p.Rows, r), rid
	}
	return p, rows.Err()
}

// scanRow reads one row of browse's page query.
func scanRow(rows *sql.Rows) (Row, int64, error) {
	var r Row
	var rid, at int64
	err := rows.Scan(&rid, &r.ExecutionID, &r.SessionID, &r.Language, &r.CodePreview, &r.Status, &r.ExitCode,
		&r.ErrorPreview, &r.DurationMs, &at, &r.Tool, &r.Owner, &r.EndReason, &r.Sandbox, &r.Denied)
	r.ExecutedAt = time.UnixMilli(at).UTC()
	return r, rid, err
}

// Inspect implements Browser: Get within scope.
func (x *Index) Inspect(ctx context.Context, id string, scope Scope) (execlog.Entry, error) {
	owner, all := scope.Resolve(ctx)
	return x.get(ctx, id, owner, all)
}

// Overview implements Browser with three aggregate queries over the
// window's rowid range, each reading a covering index (execs_owner,
// execs_all_window): counts by bucket, status and sandbox (with the
// refused hosts summed), the durations' histogram for the percentiles,
// and the most refused hosts.
func (x *Index) Overview(ctx context.Context, w Window) (Overview, error) {
	w, err := w.Normalize(time.Now())
	if err != nil {
		return Overview{}, err
	}
	if err := x.Sync(ctx, false); err != nil {
		return Overview{}, x.unavailable(err)
	}
	o, err := x.overview(ctx, w)
	if err != nil && ctx.Err() == nil {
		return Overview{}, x.unavailable(err)
	}
	return o, err
}

func (x *Index) overview(ctx context.Context, w Window) (Overview, error) {
	db, err := x.conn()
	if err != nil {
		return Overview{}, err
	}
	owner, all := w.Resolve(ctx)
	from, until, bucket := w.Keys()
	scope := "e.rid >= ? AND e.rid < ?"
	args := []any{from, until}
	if !all {
		scope, args = scope+" AND e.owner = ?", append(args, owner)
	}
	o := NewOverview(w)
	if err := x.countWindow(ctx, db, &o, scope, append([]any{from, bucket}, args...)); err != nil {
		return Overview{}, err
	}
	if o.Runs == 0 {
		return o, nil
	}
	if err := percentiles(ctx, db, &o, `SELECT e.duration_ms FROM execs e WHERE `+scope, args); err != nil {
		return Overview{}, err
	}
	hosts, err := db.QueryContext(ctx, `SELECT d.host, count(*) FROM denials d JOIN execs e ON e.rid = d.rid
		WHERE d.rid >= ? AND d.rid < ? AND `+scope+` GROUP BY d.host ORDER BY 2 DESC, 1 LIMIT ?`,
		append(append([]any{from, until}, args...), TopHosts)...)
	if err != nil {
		return Overview{}, err
	}
	defer hosts.Close()
	for hosts.Next() {
		var h HostCount
		if err := hosts.Scan(&h.Host, &h.Count); err != nil {
			return Overview{}, err
		}
		o.DeniedHosts = append(o.DeniedHosts, h)
	}
	return o, hosts.Err()
}

// countWindow adds the window's counts by bucket, status and sandbox.
func (x *Index) countWindow(ctx context.Context, db *sql.DB, o *Overview, scope string, args []any) error {
	rows, err := db.QueryContext(ctx, `SELECT (e.rid - ?) / ?, e.status, e.sandbox, count(*), sum(e.denied)
		FROM execs e WHERE `+scope+` GROUP BY 1, 2, 3`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var i int64
		var status, sandbox string
		var n, denied int
		if err := rows.Scan(&i, &status, &sandbox, &n, &denied); err != nil {
			return err
		}
		o.Add(i, status, sandbox, n, denied)
	}
	return rows.Err()
}

// percentiles sets o's P50 and P90 from the histogram of the durations
// (ms) durations selects.
func percentiles(ctx context.Context, db *sql.DB, o *Overview, durations string, args []any) error {
	rows, err := db.QueryContext(ctx, `SELECT duration_ms, count(*) FROM (`+durations+`) GROUP BY 1`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	hist := map[int64]int{}
	for rows.Next() {
		var ms int64
		var n int
		if err := rows.Scan(&ms, &n); err != nil {
			return err
		}
		hist[ms] = n
	}
	o.SetPercentiles(hist)
	return rows.Err()
}

var _ ValueLister = (*Index)(nil)

// Values implements ValueLister over execs_lang and execs_tool (a
// principal's) or execs_all_lang and execs_all_tool (everyone's).
func (x *Index) Values(ctx context.Context, scope Scope) (Values, error) {
	if err := x.Sync(ctx, false); err != nil {
		return Values{}, x.unavailable(err)
	}
	db, err := x.conn()
	if err != nil {
		return Values{}, x.unavailable(err)
	}
	owner, all := scope.Resolve(ctx)
	cond, args := "owner = ?", []any{owner, owner}
	if all {
		cond, args = "", nil
	}
	var v Values
	for _, c := range []struct {
		column string
		out    *[]string
	}{{"language", &v.Languages}, {"tool", &v.Tools}} {
		if *c.out, err = distinct(ctx, db, DistinctSQL("execs", c.column, cond), args); err != nil {
			return Values{}, x.unavailable(err)
		}
	}
	return v, nil
}

func distinct(ctx context.Context, db *sql.DB, q string, args []any) ([]string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
