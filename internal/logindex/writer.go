package logindex

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/codexec/codexec/internal/tenant"
)

// writer adds lines to the index inside one transaction.
type writer struct {
	ctx             context.Context
	tx              *sql.Tx
	exec, fts, deny *sql.Stmt
}

func (x *Index) newWriter(ctx context.Context) (*writer, error) {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	w := &writer{ctx: ctx, tx: tx}
	w.exec, err = tx.PrepareContext(ctx, `INSERT INTO execs
		(rid, id, file, offset, length, session_id, owner, language, status, exit_code, duration_ms, executed_at, code_preview,
		error_preview, tool, end_reason, sandbox, denied) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`)
	if err == nil {
		w.fts, err = tx.PrepareContext(ctx, `INSERT INTO execs_fts(rowid, code, output, meta) VALUES (?,?,?,?)`)
	}
	if err == nil {
		w.deny, err = tx.PrepareContext(ctx, `INSERT OR IGNORE INTO denials(rid, host) VALUES (?,?)`)
	}
	if err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	return w, nil
}

// add indexes one complete line found at off in file. Lines that are not
// executions are skipped, except session_start, which names the session's
// language for the execution lines that follow (the session file format omits it there).
func (w *writer) add(file string, off int64, b []byte, lang *string) error {
	l, skip, ok := decodeLine(b)
	if !ok {
		if len(strings.TrimSpace(string(b))) > 0 {
			slog.Warn("execution log: skipping unreadable line", "file", file, "offset", off)
		}
		return nil
	}
	if skip > 0 {
		slog.Warn("execution log: skipped torn fragment before entry", "file", file, "offset", off, "bytes", skip)
	}
	if l.Type == "session_start" && l.Language != "" {
		*lang = l.Language
	}
	if l.Type != "execution" || l.ExecutionID == "" {
		return nil
	}
	if l.Language == "" {
		l.Language = *lang
	}
	f := l.fields()
	rid := f.Key
	for tries := 0; ; tries++ {
		_, err := w.exec.ExecContext(w.ctx, rid, f.ExecutionID, file, off+int64(skip), len(b)-skip, f.SessionID,
			f.Owner, f.Language, f.Status, f.ExitCode, f.DurationMs, f.ExecutedAt.UnixMilli(), f.CodePreview, f.ErrorPreview,
			f.Tool, f.EndReason, f.Sandbox, len(f.DeniedHosts))
		if err == nil {
			break
		}
		switch msg := err.Error(); {
		case strings.Contains(msg, "execs.id"):
			return nil // duplicate id: the first occurrence wins
		case strings.Contains(msg, "execs.rid") && tries < 4*ridSlots:
			rid++ // same millisecond slot taken: next one
		default:
			return err
		}
	}
	for _, h := range f.DeniedHosts {
		if _, err := w.deny.ExecContext(w.ctx, rid, h); err != nil {
			return err
		}
	}
	_, err := w.fts.ExecContext(w.ctx, rid, f.Text[0], f.Text[1], f.Text[2])
	return err
}

// owner is the principal an entry belongs to: entries without one predate
// tenants and are the local principal's.
func owner(o string) string {
	if o == "" {
		return tenant.Local
	}
	return o
}

// tenantToken marks, in the FTS meta column, every execution of a principal
// other than tenant.Local.
var tenantToken = metaToken("owner", "tenant")

// ownerTokens are the FTS tokens of an owner: none for tenant.Local (so the
// single-user stdio case pays nothing: its text queries exclude the usually
// empty tenantToken doclist), tenantToken plus one built from tenant.Tag
// (principal names may hold any character) for anyone else.
func ownerTokens(o string) string {
	tag := tenant.Tag(owner(o))
	if tag == "" {
		return ""
	}
	return " " + tenantToken + " " + metaToken("owner", tag)
}

// ownerMatch restricts an FTS expression to owner's executions.
func ownerMatch(match, o string) string {
	tag := tenant.Tag(owner(o))
	if tag == "" {
		return "(" + match + `) NOT "` + tenantToken + `"`
	}
	return match + ` AND "` + metaToken("owner", tag) + `"`
}

// metaToken is the FTS token standing for a filter value, so text queries
// with status/language filters are answered by intersecting doclists alone.
func metaToken(kind, v string) string { return "codexec" + kind + strings.ToLower(v) }

// ridSlots is how many executions one millisecond can hold in the rowid
// space before a collision spills into the next millisecond's slots.
const ridSlots = 1024

// TimeKey is the smallest rowid of executions at t: rowids are time-ordered
// so "newest first" is a backward walk of the primary key (or of FTS5's
// rowid-ordered doclists) that stops after LIMIT rows, with no sort.
func TimeKey(t time.Time) int64 { return t.UnixMilli() * ridSlots }

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

func (w *writer) finish(file string, off int64, ino uint64, lang string) error {
	_, err := w.tx.ExecContext(w.ctx, `INSERT INTO files(name, offset, ino, language) VALUES (?,?,?,?)
		ON CONFLICT(name) DO UPDATE SET offset=excluded.offset, ino=excluded.ino, language=excluded.language`,
		file, off, int64(ino), lang)
	if err != nil {
		w.abort()
		return err
	}
	return w.tx.Commit()
}

func (w *writer) abort() { _ = w.tx.Rollback() }

// previewLen is the code_preview length: the first 200 characters.
const previewLen = 200

func preview(s string) string {
	if utf8.RuneCountInString(s) <= previewLen {
		return s
	}
	r := []rune(s)
	return string(r[:previewLen])
}

// errorPreview is the most telling error line: the last non-empty stderr
// line (a Python traceback's exception), else the error message.
func errorPreview(l line, status string) *string {
	if status == "success" {
		return nil
	}
	lines := strings.Split(strings.TrimRight(l.Stderr, "\n "), "\n")
	p := strings.TrimSpace(lines[len(lines)-1])
	if p == "" {
		p = l.ErrorMessage
	}
	p = preview(p)
	return &p
}
