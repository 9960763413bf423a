package logindex

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/atomicfile"
)

// Retention is how long each kind of log is kept, in days.
type Retention struct {
	Success, Failure, Session int
}

// ApplyRetention drops expired history as of now: successful one-shot
// executions older than r.Success days, failed and timed-out ones older than
// r.Failure days (entries are rewritten out of their daily file atomically;
// a file left empty is removed), and session files whose last write is
// older than r.Session days. The index follows. Daily files recent enough
// to hold no expired entry are not read.
func (x *Index) ApplyRetention(ctx context.Context, now time.Time, r Retention) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.open(); err != nil {
		return x.unavailable(err)
	}
	ents, err := os.ReadDir(x.dir)
	if err != nil {
		return err
	}
	oldest := now.AddDate(0, 0, -min(r.Success, r.Failure))
	for _, e := range ents {
		name := e.Name()
		var changed bool
		switch {
		case strings.HasPrefix(name, "executions-") && strings.HasSuffix(name, ".jsonl"):
			day, perr := time.Parse("2006-01-02", strings.TrimSuffix(strings.TrimPrefix(name, "executions-"), ".jsonl"))
			if perr != nil || !day.AddDate(0, 0, 1).Before(oldest) {
				continue
			}
			changed, err = x.pruneDaily(name, now, r)
		case strings.HasPrefix(name, "session-") && strings.HasSuffix(name, ".jsonl"):
			changed, err = x.pruneSession(name, now, r.Session)
		}
		if err != nil {
			return err
		}
		if changed {
			if err := x.catchUp(ctx, name); err != nil {
				return err
			}
		}
	}
	return nil
}

func (x *Index) pruneSession(name string, now time.Time, days int) (bool, error) {
	path := filepath.Join(x.dir, name)
	fi, err := os.Stat(path)
	if err != nil || !fi.ModTime().Before(now.AddDate(0, 0, -days)) {
		return false, nil
	}
	slog.Info("log retention: removing session log", "file", name, "last_write", fi.ModTime().UTC())
	return true, os.Remove(path)
}

// pruneDaily rewrites a daily file without its expired entries (and without
// unreadable fragments), or removes it when nothing is left.
func (x *Index) pruneDaily(name string, now time.Time, r Retention) (bool, error) {
	path := filepath.Join(x.dir, name)
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var keep bytes.Buffer
	dropped := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		l, skip, ok := decodeLine(sc.Bytes())
		if !ok || expired(l, now, r) {
			dropped++
			continue
		}
		keep.Write(sc.Bytes()[skip:])
		keep.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	if dropped == 0 {
		return false, nil
	}
	slog.Info("log retention: dropping expired entries", "file", name, "dropped", dropped, "kept_bytes", keep.Len())
	if keep.Len() == 0 {
		return true, os.Remove(path)
	}
	return true, atomicfile.WriteFile(path, keep.Bytes(), 0o600)
}

func expired(l line, now time.Time, r Retention) bool {
	days := r.Failure
	if SearchStatus(l.Status, l.TimedOut, l.ExitCode) == "success" {
		days = r.Success
	}
	return l.when().Before(now.AddDate(0, 0, -days))
}

// Run keeps the index current until ctx ends: removal of the temporary
// files an interrupted retention rewrite left, a full catch-up and retention
// pass now, then retention every interval; between them, files marked by
// Notify are indexed within a second so queries rarely wait for it. Errors
// are logged, not fatal.
func (x *Index) Run(ctx context.Context, r Retention, interval time.Duration) {
	start := time.Now()
	x.removeStaleTemps()
	if err := x.Sync(ctx, true); err != nil {
		slog.Warn("log index catch-up failed; retried on every search", "err", x.unavailable(err))
	} else {
		slog.Info("log index ready", "ms", time.Since(start).Milliseconds())
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	fresh := time.NewTicker(time.Second)
	defer fresh.Stop()
	x.retain(ctx, r)
	for {
		select {
		case <-ctx.Done():
			return
		case <-fresh.C:
			if x.hasDirty() {
				if err := x.Sync(ctx, false); err != nil && ctx.Err() == nil {
					slog.Warn("log index catch-up failed", "err", err)
				}
			}
		case <-t.C:
			x.retain(ctx, r)
		}
	}
}

// staleTempAge spares a retention rewrite of another server sharing the
// log directory that is still in progress.
const staleTempAge = time.Minute

// removeStaleTemps deletes the temporary files a crash in the middle of a
// retention rewrite left in the log directory.
func (x *Index) removeStaleTemps() {
	removed, err := atomicfile.RemoveStale(x.dir, staleTempAge)
	if len(removed) > 0 {
		slog.Info("log directory: removed temporary files left by an interrupted rewrite", "dir", x.dir, "files", removed)
	}
	if err != nil {
		slog.Warn("log directory: cannot remove stale temporary files", "dir", x.dir, "err", err)
	}
}

func (x *Index) retain(ctx context.Context, r Retention) {
	if err := x.ApplyRetention(ctx, time.Now(), r); err != nil && ctx.Err() == nil {
		slog.Warn("log retention failed; retried at the next pass", "err", err)
	}
}

func (x *Index) hasDirty() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.dirty) > 0
}
