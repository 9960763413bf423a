// Package logindex keeps a SQLite (FTS5) index of the JSONL execution log so
// search_execution_logs and get_execution_log stay fast as history grows.
// The JSONL files written by execlog remain the source of truth: the index
// stores, per execution, the filterable fields, previews and the byte range
// of its line, plus per-file byte offsets, and is caught up from the files
// (Sync) at start-up, after every append (Notify) and before every query. It
// is a cache: deleting the database file only costs a rebuild, and an index
// written by an older schema version is rebuilt at Open.
//
// Every execution is indexed with its owner (the entry's "owner", or
// tenant.Local for entries written before tenants existed). Search and Get
// answer only for the principal of their ctx (tenant.From): another
// principal's execution is not found, exactly like an unknown id.
//
// An Index is safe for concurrent use; writes are serialised by one mutex.
package logindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"modernc.org/sqlite" // pure-Go SQLite driver with FTS5
	sqlite3 "modernc.org/sqlite/lib"
)

// FileName is the index database's name inside the log directory.
const FileName = "index.sqlite"

// schemaVersion is stored in PRAGMA user_version; an index of another
// version is dropped and rebuilt from the JSONL files.
const schemaVersion = 4

const schema = `
CREATE TABLE IF NOT EXISTS files (
  name TEXT PRIMARY KEY, offset INTEGER NOT NULL, ino INTEGER NOT NULL, language TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS execs (
  rid INTEGER PRIMARY KEY, -- executed_at in ms * 1024 + tiebreak: rowid order is time order
  id TEXT NOT NULL UNIQUE, file TEXT NOT NULL, offset INTEGER NOT NULL,
  length INTEGER NOT NULL, session_id TEXT, owner TEXT NOT NULL, language TEXT NOT NULL, status TEXT NOT NULL,
  exit_code INTEGER, duration_ms INTEGER NOT NULL, executed_at INTEGER NOT NULL,
  code_preview TEXT NOT NULL, error_preview TEXT,
  tool TEXT NOT NULL, end_reason TEXT NOT NULL, sandbox TEXT NOT NULL, denied INTEGER NOT NULL);
-- A principal's queries filter by owner, so their indexes lead with it; an
-- operator's (every owner) use the ones without. All end, as SQLite indexes
-- do, with the rowid (execs_owner has it next to owner): newest first is a
-- backward walk, never a sort. execs_owner also covers the overview.
CREATE INDEX IF NOT EXISTS execs_owner ON execs(owner, rid, status, sandbox, denied, duration_ms);
CREATE INDEX IF NOT EXISTS execs_status ON execs(owner, status);
CREATE INDEX IF NOT EXISTS execs_lang ON execs(owner, language);
CREATE INDEX IF NOT EXISTS execs_lang_status ON execs(owner, language, status);
CREATE INDEX IF NOT EXISTS execs_tool ON execs(owner, tool);
CREATE INDEX IF NOT EXISTS execs_session ON execs(session_id) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS execs_all_status ON execs(status);
CREATE INDEX IF NOT EXISTS execs_all_lang ON execs(language);
CREATE INDEX IF NOT EXISTS execs_all_tool ON execs(tool);
-- The window's executions as the overview counts them, without reading
-- the table (execs_owner also covers them for one principal).
CREATE INDEX IF NOT EXISTS execs_all_window ON execs(rid, status, sandbox, denied, duration_ms);
CREATE INDEX IF NOT EXISTS execs_file ON execs(file);
-- The hosts each execution was refused, for the console's overview.
CREATE TABLE IF NOT EXISTS denials (rid INTEGER NOT NULL, host TEXT NOT NULL, PRIMARY KEY (rid, host)) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS execs_fts USING fts5(
  code, output, meta, content='', contentless_delete=1, detail=none, tokenize="unicode61 tokenchars '_'");
`

// Index is a log index. Create it with New or Open; Close it when done.
type Index struct {
	dir, dbPath string

	mu sync.Mutex // serialises opening, catch-up, retention and writes
	// db is nil until the database could be opened (and after Close).
	db       *sql.DB
	dirty    map[string]bool
	lastScan time.Time
	// tornSize remembers each file's size at its last catch-up, so a file
	// ending in a torn line is not re-read (and re-warned) on every scan.
	tornSize map[string]int64
}

// New returns the index of the log directory dir, stored at dbPath, without
// touching the disk: the database is opened on first use, and again on each
// use after a failure, so an index that cannot be opened at start-up (a full
// disk, a read-only directory) does not stop the server and starts working
// once the cause is gone. Until then its methods return ErrUnavailable.
func New(dir, dbPath string) *Index {
	return &Index{dir: dir, dbPath: dbPath, dirty: map[string]bool{}, tornSize: map[string]int64{}}
}

// Open is New followed by Ready: it fails when the database cannot be opened
// now. It does not catch up; call Sync.
func Open(dir, dbPath string) (*Index, error) {
	x := New(dir, dbPath)
	if err := x.Ready(); err != nil {
		return nil, err
	}
	return x, nil
}

// Ready opens the database if it is not open yet and reports why it cannot
// be (an ErrUnavailable error), e.g. for a warning at start-up.
func (x *Index) Ready() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.open(); err != nil {
		return x.unavailable(err)
	}
	return nil
}

// open opens the database unless it is open. A corrupt database is a cache
// to rebuild, so it is removed and created anew; any other failure (full
// disk, read-only or missing directory) leaves the file alone for the next
// attempt. x.mu must be held.
func (x *Index) open() error {
	if x.db != nil {
		return nil
	}
	db, err := openDB(x.dbPath)
	if err != nil && corrupt(err) {
		slog.Warn("log index: database unreadable, rebuilding it from the log files", "path", x.dbPath, "err", err)
		_ = os.Remove(x.dbPath)
		db, err = openDB(x.dbPath)
	}
	if err != nil {
		return err
	}
	x.db = db
	x.lastScan = time.Time{} // the first Sync scans every file
	return nil
}

// corrupt reports whether err is SQLite's verdict that the file is not a
// usable database (SQLITE_CORRUPT, SQLITE_NOTADB).
func corrupt(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff // primary result code
	return code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB
}

// conn returns the open database, for queries outside x.mu.
func (x *Index) conn() (*sql.DB, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.db == nil {
		return nil, errors.New("index closed")
	}
	return x.db, nil
}

func openDB(path string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	// SQLite says only "unable to open database file"; opening the file
	// ourselves tells why (e.g. "read-only file system").
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is in ErrUnavailable's message already
		}
		return nil, err
	}
	_ = f.Close()
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(5000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := migrate(db); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// migrate creates the schema, first dropping an index of another version
// (it is a cache: the next Sync rebuilds it from the files). An index of the
// current version is not written to, so opening it works on a full disk.
func migrate(db *sql.DB) error {
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v == schemaVersion {
		return nil
	}
	for _, t := range []string{"execs_fts", "execs", "files", "denials"} {
		if _, err := db.Exec(`DROP TABLE IF EXISTS ` + t); err != nil {
			return err
		}
	}
	if _, err := db.Exec(schema); err != nil {
		return err
	}
	_, err := db.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion))
	return err
}

// Close closes the database.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.db == nil {
		return nil
	}
	err := x.db.Close()
	x.db = nil
	return err
}

// Notify marks a log file as appended to; the next query catches it up. It
// is cheap and safe to call from execlog.Logger.OnAppend.
func (x *Index) Notify(file string) {
	x.mu.Lock()
	x.dirty[file] = true
	x.mu.Unlock()
}

// rescanEvery bounds how stale the index may be for files changed behind
// the server's back (hand-written or copied-in JSONL).
const rescanEvery = 2 * time.Second

// Sync catches the index up with the log directory: files appended to since
// the last call, plus a full directory scan when the last one is older than
// rescanEvery (or force is set). It opens the database first if needed. A
// failed catch-up leaves the next Sync to scan every file again, so nothing
// written meanwhile is missed.
func (x *Index) Sync(ctx context.Context, force bool) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.open(); err != nil {
		return err
	}
	files := x.dirty
	x.dirty = map[string]bool{}
	if force || time.Since(x.lastScan) > rescanEvery {
		all, err := x.scanDir()
		if err != nil {
			x.lastScan = time.Time{}
			return err
		}
		files = all
		x.lastScan = time.Now()
	}
	for f := range files {
		if err := x.catchUp(ctx, f); err != nil {
			x.lastScan = time.Time{}
			return fmt.Errorf("indexing %s: %w", f, err)
		}
	}
	return nil
}
