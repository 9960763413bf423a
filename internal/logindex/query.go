package logindex

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/tenant"
)

// ErrNotFound is returned by Get for an unknown execution id.
var ErrNotFound = errors.New("execution not found")

// ErrInvalidQuery marks a Search error caused by the query itself (a bad
// status, text without searchable words); nothing is wrong with the index.
var ErrInvalidQuery = errors.New("invalid query")

// ErrUnavailable marks errors of an index that cannot be opened, read or
// brought up to date (a full disk, a read-only log directory). The message
// says why and names the database; the index recovers by itself once the
// cause is gone.
var ErrUnavailable = errors.New("execution log index unavailable")

// unavailable wraps err as ErrUnavailable.
func (x *Index) unavailable(err error) error {
	return fmt.Errorf("%w: %v (%s)", ErrUnavailable, err, x.dbPath)
}

// Statuses are the values Query.Status accepts besides "" (any status).
var Statuses = []string{"success", "failed", "timeout", "cancelled", "lost"}

// Query filters search_execution_logs. Zero fields do not filter. Limit
// defaults to 20 and is capped at MaxLimit.
type Query struct {
	Language string
	Status   string // success | failed | timeout | cancelled | lost
	Text     string // words that must all occur in the code or the output
	// Host and DeniedHost keep runs whose network audit has the host
	// reached (allowed), or denied.
	Host, DeniedHost string
	Since            time.Time
	Limit            int
}

// MaxLimit caps one page of results.
const MaxLimit = 200

// CountCap bounds the total count: Search counts matches up to CountCap+1,
// so a query matching most of a million entries stays fast; a total above
// CountCap means "more than CountCap".
const CountCap = 10000

// Hit is one search result with the fields search_logs documents.
type Hit struct {
	ExecutionID  string    `json:"execution_id"`
	SessionID    *string   `json:"session_id"`
	Language     string    `json:"language"`
	CodePreview  string    `json:"code_preview"`
	Status       string    `json:"status"`
	ExitCode     *int      `json:"exit_code"`
	ErrorPreview *string   `json:"error_preview"`
	DurationMs   int64     `json:"duration_ms"`
	ExecutedAt   time.Time `json:"executed_at"`
}

// Search returns the newest matching executions of ctx's principal and the
// total number of matches. The index is caught up first.
func (x *Index) Search(ctx context.Context, q Query) ([]Hit, int, error) {
	from, where, args, err := q.where(tenant.From(ctx))
	if err != nil {
		return nil, 0, err
	}
	if err := x.Sync(ctx, false); err != nil {
		return nil, 0, x.unavailable(err)
	}
	hits, total, err := x.search(ctx, q, from, where, args)
	if err != nil && ctx.Err() == nil {
		return nil, 0, x.unavailable(err)
	}
	return hits, total, err
}

// search runs the count and the page query of Search.
func (x *Index) search(ctx context.Context, q Query, from, where string, args []any) ([]Hit, int, error) {
	db, err := x.conn()
	if err != nil {
		return nil, 0, err
	}
	order := "e.rid"
	if from == ftsFrom {
		order = "f.rowid" // lets FTS5 deliver rows newest first and stop at LIMIT
	}
	countFrom := from
	if order == "f.rowid" {
		countFrom = "execs_fts f" // every condition is on the FTS table: skip the join
	}
	var total int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM `+countFrom+where+` LIMIT ?)`,
		append(args, CountCap+1)...).Scan(&total); err != nil {
		return nil, 0, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, MaxLimit)
	rows, err := db.QueryContext(ctx, `SELECT id, session_id, language, code_preview, status, exit_code, error_preview,
		duration_ms, executed_at FROM `+from+where+` ORDER BY `+order+` DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	hits := []Hit{}
	for rows.Next() {
		var h Hit
		var at int64
		if err := rows.Scan(&h.ExecutionID, &h.SessionID, &h.Language, &h.CodePreview, &h.Status, &h.ExitCode,
			&h.ErrorPreview, &h.DurationMs, &at); err != nil {
			return nil, 0, err
		}
		h.ExecutedAt = time.UnixMilli(at).UTC()
		hits = append(hits, h)
	}
	return hits, total, rows.Err()
}

// where returns the FROM clause, the WHERE clause and its arguments for
// owner's executions. A text query joins the FTS table so FTS5 streams
// matches newest first.
func (q Query) where(owner string) (string, string, []any, error) {
	from, conds, args, err := q.conds(owner, false, "")
	return from, " WHERE " + strings.Join(conds, " AND "), args, err
}

// conds returns the FROM clause, the conditions (ANDed) and their
// arguments for owner's executions, or everyone's when all is set, of
// tool ("" any). Everyone's executions filtered by status, language or
// tool are found through the FTS table's filter tokens too: an index per
// combination of filters would be needed otherwise, since the ones
// without owner serve a single filter in time order and a selective
// combination (an operator's timeouts of one tool) would read thousands of
// rows to fill a page.
func (q Query) conds(owner string, all bool, tool string) (string, []string, []any, error) {
	if q.Status != "" && !slices.Contains(Statuses, q.Status) {
		return "", nil, nil, fmt.Errorf("%w: status must be success, failed, timeout, cancelled or lost, got %q", ErrInvalidQuery, q.Status)
	}
	m := MatchExpr(q.Text)
	if m == "" && strings.TrimSpace(q.Text) != "" {
		return "", nil, nil, fmt.Errorf("%w: %q has no searchable words", ErrInvalidQuery, q.Text)
	}
	for _, t := range q.hostTokens() {
		if m != "" {
			m += " AND "
		}
		m += `"` + t + `"`
	}
	if m != "" {
		from, conds, args := q.ftsConds(m, owner, all, tool)
		return from, conds, args, nil
	}
	if all && (q.Status != "" || q.Language != "" || tool != "") {
		// Exact, as without text: the tokens ignore case.
		from, conds, args := q.ftsConds(m, owner, all, tool)
		if q.Language != "" {
			conds, args = append(conds, "e.language = ?"), append(args, q.Language)
		}
		return from, conds, args, nil
	}
	var conds []string
	var args []any
	if !all {
		conds, args = append(conds, "e.owner = ?"), append(args, owner)
	}
	if q.Language != "" {
		conds, args = append(conds, "e.language = ?"), append(args, q.Language)
	}
	if q.Status != "" {
		conds, args = append(conds, "e.status = ?"), append(args, q.Status)
	}
	if !q.Since.IsZero() {
		conds, args = append(conds, "e.rid >= ?"), append(args, TimeKey(q.Since))
	}
	return "execs e", conds, args, nil
}

// ftsConds answers a text query from the FTS table alone: the status and
// language filters are tokens of its meta column, the date a rowid range.
func (q Query) ftsConds(match, owner string, all bool, tool string) (string, []string, []any) {
	var toks []string
	if match != "" {
		toks = append(toks, match)
	}
	if q.Status != "" {
		toks = append(toks, `"`+metaToken("status", q.Status)+`"`)
	}
	if q.Language != "" {
		toks = append(toks, `"`+metaToken("lang", q.Language)+`"`)
	}
	if tool != "" {
		toks = append(toks, `"`+metaToken("tool", tool)+`"`)
	}
	match = strings.Join(toks, " AND ")
	if !all {
		match = ownerMatch(match, owner)
	}
	conds, args := []string{"execs_fts MATCH ?"}, []any{match}
	if !q.Since.IsZero() {
		conds, args = append(conds, "f.rowid >= ?"), append(args, TimeKey(q.Since))
	}
	return ftsFrom, conds, args
}

// ftsFrom is the FROM clause of a text query.
const ftsFrom = "execs_fts f JOIN execs e ON e.rid = f.rowid"

// MatchExpr turns free text into an FTS5 expression requiring every word
// (letters, digits, '_'), each quoted so no FTS syntax leaks through.
func MatchExpr(text string) string {
	words := strings.FieldsFunc(text, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
	})
	for i, w := range words {
		words[i] = `"` + w + `"`
	}
	return strings.Join(words, " AND ")
}

// Get returns the full log entry of one of ctx's principal's executions,
// read from its JSONL line (the index only locates it); another principal's
// is ErrNotFound. Session lines lacking a language get their session's.
func (x *Index) Get(ctx context.Context, id string) (execlog.Entry, error) {
	return x.get(ctx, id, tenant.From(ctx), false)
}

// get is Get of owner's execution, or anyone's when all is set.
func (x *Index) get(ctx context.Context, id, owner string, all bool) (execlog.Entry, error) {
	if err := x.Sync(ctx, false); err != nil {
		return execlog.Entry{}, x.unavailable(err)
	}
	// Under the lock, so a retention rewrite cannot move the line between
	// the lookup and the read.
	x.mu.Lock()
	defer x.mu.Unlock()
	var file, lang string
	var off, length int64
	err := x.db.QueryRowContext(ctx, `SELECT e.file, e.offset, e.length, e.language FROM execs e WHERE e.id = ? AND (? OR e.owner = ?)`,
		id, all, owner).Scan(&file, &off, &length, &lang)
	if errors.Is(err, sql.ErrNoRows) {
		return execlog.Entry{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return execlog.Entry{}, x.unavailable(err)
	}
	b, err := readAt(filepath.Join(x.dir, file), off, length)
	if err != nil {
		return execlog.Entry{}, err
	}
	var e execlog.Entry
	if err := json.Unmarshal(b, &e); err != nil || e.ExecutionID != id {
		return execlog.Entry{}, fmt.Errorf("log line of %s unreadable (file changed behind the index?): %v", id, err)
	}
	return AsLogged(e, lang), nil
}

// statusOrDerived keeps the engine's status, or derives one for
// session lines that carry none.
func statusOrDerived(e execlog.Entry) string {
	if e.Status != "" {
		return e.Status
	}
	switch SearchStatus("", e.TimedOut, e.ExitCode) {
	case "success":
		return "success"
	case "timeout":
		return "timeout"
	}
	return "execution_error"
}

func readAt(path string, off, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, err
	}
	return b, nil
}
