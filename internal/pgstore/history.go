package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/tenant"
	"github.com/jackc/pgx/v5"
)

// History is the execution history kept in the database: the same
// searches, gets and retention as the embedded index (logindex.History).
type History struct{ s *Store }

// History returns the store's execution history.
func (s *Store) History() *History { return &History{s} }

var _ logindex.History = (*History)(nil)

// keyTries bounds how many later keys an execution sharing its
// millisecond slot tries (as the embedded index does).
const keyTries = 4 * 1024

// Append implements logindex.History. An entry whose id is recorded is
// ignored; its ordering key is the next free one from its Fields.Key.
func (h *History) Append(ctx context.Context, e execlog.Entry) error {
	r, ok, err := recordOf(e)
	if !ok || err != nil {
		return err
	}
	now := time.Now().UTC()
	for key, tries := r.f.Key, 0; ; key, tries = key+1, tries+1 {
		_, err := h.s.pool.Exec(ctx, `INSERT INTO executions (`+recordColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, array_to_tsvector($12::text[]), $13, $14, $15, $16, $17, $18)
			ON CONFLICT (id) DO NOTHING`, r.values(key, now)...)
		c, dup := uniqueViolation(err)
		if !dup || c != "executions_pkey" || tries >= keyTries {
			return unavailable(err)
		}
	}
}

// record is one execution as the executions table holds it.
type record struct {
	f     logindex.Fields
	doc   string
	words []string
}

// recordColumns are the executions columns record.values fills, in order.
const recordColumns = `rid, id, owner, session_id, language, status, exit_code, duration_ms, executed_at, code_preview,
	error_preview, words, entry, written_at, tool, end_reason, sandbox, denied_hosts`

// recordOf is e's record; ok is false for an entry the history skips (no
// execution id).
func recordOf(e execlog.Entry) (record, bool, error) {
	f, ok := logindex.FieldsOf(e)
	if !ok {
		return record{}, false, nil
	}
	doc, err := json.Marshal(execlog.AsWritten(e))
	if err != nil {
		return record{}, false, fmt.Errorf("history: encode: %w", err)
	}
	return record{f: f, doc: string(doc), words: lexemes(f.Text...)}, true, nil
}

// values are r's column values (recordColumns) under ordering key key;
// words go as a text array.
func (r record) values(key int64, now time.Time) []any {
	f := r.f
	return []any{key, f.ExecutionID, f.Owner, f.SessionID, f.Language, f.Status, f.ExitCode, f.DurationMs,
		f.ExecutedAt.UnixMilli(), noNUL(f.CodePreview), noNULp(f.ErrorPreview), r.words, r.doc, now,
		noNUL(f.Tool), noNUL(f.EndReason), noNUL(f.Sandbox), deniedHosts(f)}
}

// deniedHosts are f's refused hosts as the database holds them.
func deniedHosts(f logindex.Fields) []string {
	out := make([]string, len(f.DeniedHosts))
	for i, h := range f.DeniedHosts {
		out[i] = noNUL(h)
	}
	return out
}

// noNUL drops NUL characters, which PostgreSQL text cannot hold (the
// whole entry keeps them, JSON-escaped).
func noNUL(s string) string { return strings.ReplaceAll(s, "\x00", "") }

func noNULp(s *string) *string {
	if s == nil {
		return nil
	}
	v := noNUL(*s)
	return &v
}

// unavailable wraps a database failure as logindex.ErrUnavailable.
func unavailable(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %v (PostgreSQL)", logindex.ErrUnavailable, err)
}

// Search implements logindex.History with the embedded index's semantics:
// every word of q.Text (logindex.MatchExpr's words) in the code, output or
// filter tokens; the newest CountCap+1 counted; newest first.
func (h *History) Search(ctx context.Context, q logindex.Query) ([]logindex.Hit, int, error) {
	if err := logindex.ValidateQuery(q); err != nil {
		return nil, 0, err
	}
	where, args, ok := h.where(q, tenant.From(ctx), false)
	if !ok {
		return []logindex.Hit{}, 0, nil
	}
	var total int
	if err := h.s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM executions`+where+
		fmt.Sprintf(` LIMIT %d) m`, logindex.CountCap+1), args...).Scan(&total); err != nil {
		return nil, 0, ctxOr(ctx, err)
	}
	rows, _ := h.s.pool.Query(ctx, `SELECT id, session_id, language, code_preview, status, exit_code, error_preview,
		duration_ms, executed_at FROM executions`+where+fmt.Sprintf(` ORDER BY rid DESC LIMIT %d`, q.PageSize()), args...)
	hits, err := pgx.CollectRows(rows, scanHit)
	if err != nil {
		return nil, 0, ctxOr(ctx, err)
	}
	return hits, total, nil
}

// ctxOr returns the context's error when it ended, else err as
// unavailable.
func ctxOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return unavailable(err)
}

func scanHit(row pgx.CollectableRow) (logindex.Hit, error) {
	var h logindex.Hit
	var at int64
	err := row.Scan(&h.ExecutionID, &h.SessionID, &h.Language, &h.CodePreview, &h.Status, &h.ExitCode, &h.ErrorPreview,
		&h.DurationMs, &at)
	h.ExecutedAt = time.UnixMilli(at).UTC()
	return h, err
}

// where is the WHERE clause of q for owner's executions (everyone's when
// all is set); ok is false when q's text has no word PostgreSQL can hold
// (nothing matches). Filters on a text query compare case-insensitively,
// as the index's filter tokens do.
func (h *History) where(q logindex.Query, owner string, all bool) (string, []any, bool) {
	conds, args := []string{"true"}, []any{}
	if !all {
		conds, args = []string{"owner = $1"}, []any{owner}
	}
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	text := strings.TrimSpace(q.Text) != ""
	if text {
		tq := tsquery(q.Text)
		if tq == "" {
			return "", nil, false
		}
		add("words @@ $%d::tsquery", tq)
	}
	switch {
	case q.Language != "" && text:
		add("lower(language) = lower($%d)", q.Language)
	case q.Language != "":
		add("language = $%d", q.Language)
	}
	if q.Status != "" {
		add("status = $%d", q.Status)
	}
	for _, t := range logindex.HostTokens(q) {
		add("words @@ $%d::tsquery", tsquery(t))
	}
	if !q.Since.IsZero() {
		add("rid >= $%d", logindex.TimeKey(q.Since))
	}
	return " WHERE " + strings.Join(conds, " AND "), args, true
}

// Get implements logindex.History: the entry as it was appended,
// completed as the index completes it.
func (h *History) Get(ctx context.Context, id string) (execlog.Entry, error) {
	return h.get(ctx, id, tenant.From(ctx), false)
}

// get is Get of owner's execution, or anyone's when all is set.
func (h *History) get(ctx context.Context, id, owner string, all bool) (execlog.Entry, error) {
	var doc, lang string
	err := h.s.pool.QueryRow(ctx, `SELECT entry, language FROM executions WHERE id = $1 AND ($2 OR owner = $3)`,
		id, all, owner).Scan(&doc, &lang)
	if errors.Is(err, pgx.ErrNoRows) {
		return execlog.Entry{}, fmt.Errorf("%w: %s", logindex.ErrNotFound, id)
	}
	if err != nil {
		return execlog.Entry{}, ctxOr(ctx, err)
	}
	var e execlog.Entry
	if err := json.Unmarshal([]byte(doc), &e); err != nil {
		return execlog.Entry{}, fmt.Errorf("history: entry %s unreadable: %w", id, err)
	}
	return logindex.AsLogged(e, lang), nil
}
