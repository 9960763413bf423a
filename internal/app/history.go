package app

import (
	"context"
	"path/filepath"
	"time"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/mcpserver"
	"github.com/codexec/codexec/internal/scripts"
)

// retentionEvery is how often the log retention timer runs.
const retentionEvery = time.Hour

// buildHistory opens the script library and the execution-log index, hooks
// the index to the logger, and starts the index's catch-up and retention
// loop (stopped by App.Close).
func (a *App) buildHistory(ctx context.Context, cfg config.Config, deps *mcpserver.Deps) error {
	store, err := scripts.Open(cfg.ScriptsDir)
	if err != nil {
		return err
	}
	deps.Scripts = &scripts.Runner{Store: store, Engine: a.Engine}
	logger := a.Engine.Logger()
	idx, err := logindex.Open(logger.Dir(), filepath.Join(logger.Dir(), logindex.FileName))
	if err != nil {
		return err
	}
	logger.OnAppend(func(file string, _ int64, _ []byte) { idx.Notify(file) })
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	r := cfg.RetentionDays
	go func() {
		defer close(done)
		idx.Run(runCtx, logindex.Retention{Success: r.Success, Failure: r.Failure, Session: r.Session}, retentionEvery)
	}()
	a.closers = append(a.closers, func() { cancel(); <-done; _ = idx.Close() })
	deps.Logs = idx
	return nil
}
