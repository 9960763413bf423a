package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/mcpserver"
	"github.com/codexec/codexec/internal/runs"
)

// buildRuns makes the keeper of background runs: results into the blob
// store, lost runs from the history, execution ids claimed in the session
// registry when replicated. Close cancels the runs still going and stores
// their results; it runs before the engine and the store close.
func (a *App) buildRuns(cfg config.Config, store files.Store, deps *mcpserver.Deps) {
	dir := filepath.Join(cfg.DataDir, "runs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		slog.Warn("background runs: no directory for results on their way to the store; using the system's", "err", err)
		dir = ""
	}
	removeStaleRunFiles(dir)
	d := runs.Deps{Store: store}
	if deps.Logs != nil {
		d.History = deps.Logs
	}
	if a.replicas != nil {
		d.Claims = a.replicas
	}
	m := runs.New(runs.Options{MaxPerPrincipal: cfg.Background.MaxRuns, OutputMax: cfg.Background.MaxOutput,
		Keep: cfg.ArtifactTTL, Dir: dir}, d)
	a.closers = append(a.closers, m.Close)
	deps.Runs = m
}

// staleRunFiles is how old the files of a result on its way to the store
// must be to be removed at start (another server sharing the data
// directory may be writing its own).
const staleRunFiles = time.Hour

// removeStaleRunFiles removes what a killed server left in dir.
func removeStaleRunFiles(dir string) {
	entries, err := os.ReadDir(dir)
	if dir == "" || err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err == nil && strings.HasPrefix(e.Name(), "run-") && time.Since(info.ModTime()) > staleRunFiles {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}
