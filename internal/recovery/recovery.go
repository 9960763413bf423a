// Package recovery closes, at a server's start, what servers that are gone
// (killed, crashed) left open: from their in-flight journals it logs their
// runs in flight as lost and their live sessions as ended, removes the
// directories they made, and removes the temporary files interrupted
// script writes left behind.
package recovery

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/inflight"
	"github.com/codexec/codexec/internal/scripts"
	"github.com/codexec/codexec/internal/session"
)

// Run closes what dead servers left open (CloseLeftovers) and removes the
// stale temporary files of the script library (RemoveStaleTemps). It runs
// before this server records its own work, once the backend killed what
// the dead servers' runs left running and their bounded disks were
// detached from their workspaces.
func Run(logDir, scriptsDir, sandboxDir string, log *execlog.Logger) {
	CloseLeftovers(JournalDir(logDir), log, sandboxDir)
	RemoveStaleTemps(scriptsDir, JournalDir(logDir))
}

// JournalDir holds the servers' in-flight journals, beside the execution
// log (a directory of its own: the log index reads every *.jsonl of the log
// directory).
func JournalDir(logDir string) string { return filepath.Join(logDir, "inflight") }

// CloseLeftovers closes what servers that are gone (killed, crashed) left
// open, from their in-flight journals: their runs in flight are logged as
// lost, their live sessions as ended (server_restart), and the directories
// they made for them under sandboxDir are removed. It runs once the backend
// has killed what those runs left running, and reads nothing but the dead
// servers' journals.
func CloseLeftovers(dir string, log *execlog.Logger, sandboxDir string) {
	lefts, err := inflight.Leftovers(dir)
	if err != nil {
		slog.Warn("reading the in-flight journals of earlier servers", "err", err)
	}
	for _, l := range lefts {
		lost := logLost(log, l.Runs)
		for _, s := range l.Sessions {
			if err := session.EndLeftover(log, s, lost[s.LogFile]); err != nil {
				slog.Error("execution log write failed (session end of a dead server)", "session_id", s.ID, "err", err)
			}
		}
		removed := removeLeftoverDirs(l.Dirs, sandboxDir)
		if err := l.Remove(); err != nil {
			slog.Warn("removing the in-flight journal of a dead server", "server", l.Server, "err", err)
		}
		slog.Info("closed what a dead codexec server left open", "server", l.Server, "lost_runs", len(l.Runs),
			"ended_sessions", len(l.Sessions), "removed_dirs", removed)
	}
}

// staleTempAge is how old a temporary file of the script library must be
// to be removed at start while another live server shares the data
// directory (its write may be in progress); with none, all are stale.
const staleTempAge = time.Minute

// RemoveStaleTemps removes the temporary files interrupted atomic writes
// left in the script library.
func RemoveStaleTemps(scriptsDir, journals string) {
	age := staleTempAge
	if !inflight.OthersAlive(journals) {
		age = 0
	}
	n, err := scripts.RemoveStaleTemps(scriptsDir, age)
	if err != nil {
		slog.Warn("removing stale temporary files of the script library", "err", err)
	}
	if n > 0 {
		slog.Info("removed temporary files of interrupted script writes", "count", n)
	}
}

// logLost logs runs as lost and returns how many each session lost, by its
// log file.
func logLost(log *execlog.Logger, runs []inflight.Run) map[string]int {
	lost := map[string]int{}
	for _, r := range runs {
		var st execlog.Started
		if err := json.Unmarshal(r.Started, &st); err != nil || st.ExecutionID == "" {
			continue
		}
		if err := log.AppendExecution(execlog.Lost(st)); err != nil {
			slog.Error("execution log write failed (lost run)", "execution_id", st.ExecutionID, "err", err)
			continue
		}
		if r.Session != "" {
			lost[r.Session]++
		}
	}
	return lost
}

// removeLeftoverDirs removes the directories that lie below sandboxDir and
// returns how many it removed; a journal never names others, but one is not
// trusted to.
func removeLeftoverDirs(dirs []string, sandboxDir string) int {
	n := 0
	root := filepath.Clean(sandboxDir) + string(filepath.Separator)
	for _, d := range dirs {
		if !strings.HasPrefix(filepath.Clean(d), root) {
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			slog.Warn("removing a directory of a dead server", "dir", d, "err", err)
			continue
		}
		n++
	}
	return n
}
