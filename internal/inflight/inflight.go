// Package inflight keeps, for one server, a journal of its work in flight:
// runs started and not yet logged as ended, live sessions, and the
// directories it created for them and has not removed. It lets the next
// server close what a killed one left open without rescanning the
// execution history: a clean shutdown removes the journal (Close); a server
// starting reads only the journals of servers that are gone (Leftovers,
// package instance) and removes each once it has dealt with it.
//
// The journal is a JSONL file named after the server in a directory of its
// own, one record per line, appended with one write each (a kill can at
// worst leave a torn last line, which readers skip). It is rewritten with
// only the open items when it grows well beyond them, so its size follows
// the work in flight, not the server's age.
//
// A Journal is safe for concurrent use. A nil *Journal records nothing, so
// callers without one need no checks. Recording is best effort: a failed
// write is logged and the work goes on.
package inflight

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/instance"
)

// Session is a live session as the journal knows it: enough to log its end.
// Its log file names it among the server's sessions (session ids are unique
// per owner only).
type Session struct {
	ID        string    `json:"id"`
	Owner     string    `json:"owner,omitempty"`
	LogFile   string    `json:"log_file"`
	StartedAt time.Time `json:"started_at"`
	// Executions counts the session's executions logged as ended.
	Executions int `json:"executions"`
}

// record is one journal line.
type record struct {
	Op string `json:"op"` // run, done, session, end, dir, rmdir
	ID string `json:"id,omitempty"`
	// Run is a run's started record (op run); Session its session's log
	// file, if any (ops run and done).
	Run     json.RawMessage `json:"run,omitempty"`
	Session string          `json:"session,omitempty"`
	// Live is a session (op session).
	Live *Session `json:"live,omitempty"`
	Path string   `json:"path,omitempty"` // ops dir and rmdir
}

// state is what a journal holds open.
type state struct {
	runs     map[string]record // op run records by id
	sessions map[string]*Session
	dirs     map[string]bool
}

func newState() *state {
	return &state{runs: map[string]record{}, sessions: map[string]*Session{}, dirs: map[string]bool{}}
}

// apply updates s with one record.
func (s *state) apply(r record) {
	switch r.Op {
	case "run":
		s.runs[r.ID] = r
	case "done":
		delete(s.runs, r.ID)
		if live := s.sessions[r.Session]; live != nil && r.Session != "" {
			live.Executions++
		}
	case "session":
		if r.Live != nil {
			live := *r.Live
			s.sessions[live.LogFile] = &live
		}
	case "end":
		delete(s.sessions, r.ID)
	case "dir":
		s.dirs[r.Path] = true
	case "rmdir":
		delete(s.dirs, r.Path)
	}
}

// records are the records that recreate s.
func (s *state) records() []record {
	var out []record
	for _, live := range s.sessions {
		out = append(out, record{Op: "session", Live: live})
	}
	for _, r := range s.runs {
		out = append(out, r)
	}
	for p := range s.dirs {
		out = append(out, record{Op: "dir", Path: p})
	}
	return out
}

// Journal is one server's journal. Create it with Open.
type Journal struct {
	mu    sync.Mutex
	path  string
	f     *os.File
	size  int64
	state *state
}

// fileExt ends every journal's name ("<server name>.journal").
const fileExt = ".journal"

// Open creates the journal of this server (instance.Self) in dir.
func Open(dir string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("inflight: %w", err)
	}
	path := filepath.Join(dir, instance.Self()+fileExt)
	f, err := createLocked(path, nil)
	if err != nil {
		return nil, fmt.Errorf("inflight: %w", err)
	}
	return &Journal{path: path, f: f, state: newState()}, nil
}

// RunStarted records a run about to start; started is its started record
// (what Leftover.Runs gives back), session the log file of its session or
// "".
func (j *Journal) RunStarted(id, session string, started any) {
	b, err := json.Marshal(started)
	if err != nil {
		slog.Warn("in-flight journal: encode", "id", id, "err", err)
		return
	}
	j.add(record{Op: "run", ID: id, Session: session, Run: b})
}

// RunEnded records that the run id (of the session whose log file is
// session, or "") was logged as ended.
func (j *Journal) RunEnded(id, session string) {
	j.add(record{Op: "done", ID: id, Session: session})
}

// SessionStarted records a live session.
func (j *Journal) SessionStarted(s Session) { j.add(record{Op: "session", Live: &s}) }

// SessionEnded records that the session whose log file is logFile was
// logged as ended.
func (j *Journal) SessionEnded(logFile string) { j.add(record{Op: "end", ID: logFile}) }

// DirCreated records a directory created for a run or session.
func (j *Journal) DirCreated(path string) { j.add(record{Op: "dir", Path: path}) }

// DirRemoved records that a directory of DirCreated was removed.
func (j *Journal) DirRemoved(path string) { j.add(record{Op: "rmdir", Path: path}) }

// compactAt is the size beyond which a journal is rewritten with its open
// items, when they take less than a quarter of it.
const compactAt = 1 << 20

func (j *Journal) add(r record) {
	if j == nil {
		return
	}
	line, err := json.Marshal(r)
	if err != nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return
	}
	j.state.apply(r)
	n, err := j.f.Write(append(line, '\n'))
	j.size += int64(n)
	if err != nil {
		slog.Warn("in-flight journal write failed", "path", j.path, "err", err)
		return
	}
	if j.size > compactAt {
		j.compact()
	}
}

// compact rewrites the journal with its open items (a temporary file
// renamed over it) when they are small enough to be worth it.
func (j *Journal) compact() {
	var buf []byte
	for _, r := range j.state.records() {
		line, _ := json.Marshal(r)
		buf = append(append(buf, line...), '\n')
	}
	if int64(len(buf)) > j.size/4 {
		return
	}
	f, err := createLocked(j.path, buf)
	if err != nil {
		slog.Warn("in-flight journal compaction failed", "path", j.path, "err", err)
		return
	}
	_ = j.f.Close()
	j.f, j.size = f, int64(len(buf))
}

// Close ends the journal at a clean shutdown and removes it: whatever it
// still holds open is the caller's to have closed. Later records are
// dropped.
func (j *Journal) Close() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	// Removed before it is closed, which frees its lock: a free lock must
	// never be seen on a live server's journal.
	err := os.Remove(j.path)
	err = errors.Join(err, j.f.Close())
	j.f = nil
	return err
}

// Run is a run that never ended.
type Run struct {
	// Started is its started record, as given to RunStarted.
	Started json.RawMessage
	// Session is the log file of its session, or "".
	Session string
}

// Leftover is what the journal of a dead server still held open.
type Leftover struct {
	// Server is the dead server's name.
	Server string
	// Runs are its runs that never ended.
	Runs []Run
	// Sessions are its sessions that never ended.
	Sessions []Session
	// Dirs are the directories it created and did not remove.
	Dirs []string
	path string
	// lock holds the journal's lock when its server was proved gone by it.
	lock *os.File
}

// Leftovers reads the journals in dir of servers that are gone. Journals of
// live servers (this one included) are left alone.
func Leftovers(dir string) ([]Leftover, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inflight: %w", err)
	}
	var out []Leftover
	for _, e := range ents {
		if server, ok := strings.CutSuffix(e.Name(), fileExt+".tmp"); ok && instance.Dead(server) {
			_ = os.Remove(filepath.Join(dir, e.Name())) // a compaction cut short
			continue
		}
		server, ok := strings.CutSuffix(e.Name(), fileExt)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		gone, lock := ownerGone(path, server)
		if !gone {
			continue
		}
		l, err := readJournal(path)
		if err != nil {
			if lock != nil {
				_ = lock.Close()
			}
			return out, err
		}
		l.Server, l.lock = server, lock
		out = append(out, l)
	}
	return out, nil
}

// OthersAlive reports whether a live server other than this one keeps its
// journal in dir: whether another server shares this data directory now.
func OthersAlive(dir string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		server, ok := strings.CutSuffix(e.Name(), fileExt)
		if !ok || server == instance.Self() {
			continue
		}
		if gone, lock := ownerGone(filepath.Join(dir, e.Name()), server); !gone {
			return true
		} else if lock != nil {
			_ = lock.Close()
		}
	}
	return false
}

// readJournal replays a journal file; a line that does not parse (a torn
// last line) is skipped.
func readJournal(path string) (Leftover, error) {
	f, err := os.Open(path)
	if err != nil {
		return Leftover{}, fmt.Errorf("inflight: %w", err)
	}
	defer f.Close()
	st := newState()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var r record
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			st.apply(r)
		}
	}
	if err := sc.Err(); err != nil {
		return Leftover{}, fmt.Errorf("inflight: read %s: %w", path, err)
	}
	l := Leftover{path: path}
	for _, id := range slices.Sorted(maps.Keys(st.runs)) {
		l.Runs = append(l.Runs, Run{Started: st.runs[id].Run, Session: st.runs[id].Session})
	}
	for _, id := range slices.Sorted(maps.Keys(st.sessions)) {
		l.Sessions = append(l.Sessions, *st.sessions[id])
	}
	l.Dirs = slices.Sorted(maps.Keys(st.dirs))
	return l, nil
}

// Remove deletes the leftover's journal, once its contents are dealt with
// (and any temporary file of a compaction its server did not finish).
func (l Leftover) Remove() error {
	_ = os.Remove(l.path + ".tmp")
	err := os.Remove(l.path)
	if l.lock != nil {
		_ = l.lock.Close()
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
