package logindex

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// line is the subset of a JSONL entry the index reads. It accepts both the
// engine's entries and the session files' lines ("at" instead of
// "executed_at", no status or language).
type line struct {
	Type         string     `json:"type"`
	ExecutionID  string     `json:"execution_id"`
	SessionID    *string    `json:"session_id"`
	Language     string     `json:"language"`
	Code         string     `json:"code"`
	Stdout       string     `json:"stdout"`
	Stderr       string     `json:"stderr"`
	ExitCode     *int       `json:"exit_code"`
	Status       string     `json:"status"`
	ErrorMessage string     `json:"error_message"`
	TimedOut     bool       `json:"timed_out"`
	DurationMs   int64      `json:"duration_ms"`
	ExecutedAt   time.Time  `json:"executed_at"`
	At           *time.Time `json:"at"`
	Owner        string     `json:"owner"`
	Tool         string     `json:"tool"`
	EndReason    string     `json:"end_reason"`
	Usage        *struct {
		Sandbox string `json:"sandbox"`
	} `json:"usage"`
	Network []struct {
		Host    string `json:"host"`
		Allowed bool   `json:"allowed"`
	} `json:"network"`
}

// when is the execution time of a line.
func (l *line) when() time.Time {
	if l.ExecutedAt.IsZero() && l.At != nil {
		return *l.At
	}
	return l.ExecutedAt
}

// SearchStatus maps an engine status onto search_execution_logs' values:
// success, timeout, cancelled, lost (the server died during the run),
// failed (execution_error and setup_error). Lines without a status (seed
// 000 session lines) are judged by timed_out and exit_code.
func SearchStatus(status string, timedOut bool, exitCode *int) string {
	switch {
	case status == "success":
		return "success"
	case status == "timeout" || (status == "" && timedOut):
		return "timeout"
	case status == "cancelled":
		return "cancelled"
	case status == "lost":
		return "lost"
	case status == "" && exitCode != nil && *exitCode == 0:
		return "success"
	}
	return "failed"
}

// decodeLine parses one JSONL line. A line that does not parse may be a
// torn fragment left by a crash with the next entry appended to it; then the
// last `{"type":` in it is tried, and skip reports how many bytes were junk.
func decodeLine(b []byte) (l line, skip int, ok bool) {
	if json.Unmarshal(b, &l) == nil {
		return l, 0, true
	}
	i := bytes.LastIndex(b, []byte(`{"type":`))
	if i > 0 && json.Unmarshal(b[i:], &l) == nil {
		return l, i, true
	}
	return line{}, 0, false
}

type fileState struct {
	offset int64
	ino    uint64
	lang   string
	known  bool
}

func (x *Index) state(ctx context.Context, name string) (fileState, error) {
	var st fileState
	err := x.db.QueryRowContext(ctx, `SELECT offset, ino, language FROM files WHERE name=?`, name).Scan(&st.offset, &st.ino, &st.lang)
	if errors.Is(err, sql.ErrNoRows) {
		return fileState{}, nil
	}
	st.known = err == nil
	return st, err
}

// scanDir returns the JSONL files whose size or inode differs from what
// the index recorded, plus those the index knows but which are gone (so
// their rows get dropped). Unchanged files cost one stat and no query.
func (x *Index) scanDir() (map[string]bool, error) {
	known := map[string][2]int64{}
	rows, err := x.db.Query(`SELECT name, offset, ino FROM files`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var n string
		var off, ino int64
		if rows.Scan(&n, &off, &ino) == nil {
			known[n] = [2]int64{off, ino}
		}
	}
	rows.Close()
	ents, err := os.ReadDir(x.dir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		st, had := known[e.Name()]
		delete(known, e.Name())
		fi, err := e.Info()
		if err != nil || !had || int64(inode(fi)) != st[1] || (fi.Size() != st[0] && fi.Size() != x.tornSize[e.Name()]) {
			out[e.Name()] = true
		}
	}
	for n := range known {
		out[n] = true
	}
	return out, nil
}

// catchUp indexes the lines of file past its recorded offset. A file that
// vanished, shrank or was replaced (new inode, e.g. a retention rewrite) is
// re-indexed from the start. x.mu must be held.
func (x *Index) catchUp(ctx context.Context, name string) error {
	st, err := x.state(ctx, name)
	if err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(x.dir, name))
	if os.IsNotExist(err) {
		return x.forget(ctx, name)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	ino := inode(fi)
	if st.known && (st.ino != ino || fi.Size() < st.offset) {
		if err := x.forget(ctx, name); err != nil {
			return err
		}
		st = fileState{}
	}
	if st.known && fi.Size() == st.offset {
		return nil
	}
	if err := x.ingest(ctx, f, name, st, ino); err != nil {
		delete(x.tornSize, name) // not caught up: the next scan retries it
		return err
	}
	x.tornSize[name] = fi.Size() // a torn tail is not re-read until the file changes
	return nil
}

func inode(fi os.FileInfo) uint64 {
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		return s.Ino
	}
	return 0
}

// forget drops every row of a file.
func (x *Index) forget(ctx context.Context, name string) error {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []string{
		`DELETE FROM execs_fts WHERE rowid IN (SELECT rid FROM execs WHERE file=?)`,
		`DELETE FROM denials WHERE rid IN (SELECT rid FROM execs WHERE file=?)`,
		`DELETE FROM execs WHERE file=?`, `DELETE FROM files WHERE name=?`,
	} {
		if _, err := tx.ExecContext(ctx, q, name); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// batchLines bounds one transaction during a large catch-up.
const batchLines = 20000

// ingest reads complete lines from st.offset and indexes them in batches,
// recording the offset after each batch so an interrupted rebuild resumes.
// An incomplete last line (no newline: torn by a crash) is left unindexed.
func (x *Index) ingest(ctx context.Context, f *os.File, name string, st fileState, ino uint64) error {
	if _, err := f.Seek(st.offset, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	off := st.offset
	for {
		w, err := x.newWriter(ctx)
		if err != nil {
			return err
		}
		done, err := x.ingestBatch(w, r, name, &off, &st.lang)
		if err == nil {
			err = w.finish(name, off, ino, st.lang)
		} else {
			w.abort()
		}
		if err != nil || done {
			return err
		}
	}
}

// ingestBatch adds up to batchLines lines; done reports the end of the
// complete lines.
func (x *Index) ingestBatch(w *writer, r *bufio.Reader, name string, off *int64, lang *string) (done bool, err error) {
	for range batchLines {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 && b[len(b)-1] != '\n' {
			slog.Warn("execution log: skipping incomplete last line (torn write)", "file", name, "offset", *off, "bytes", len(b))
			return true, nil
		}
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return true, err
		}
		if err := w.add(name, *off, b, lang); err != nil {
			return true, err
		}
		*off += int64(len(b))
	}
	return false, nil
}
