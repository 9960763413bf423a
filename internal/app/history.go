package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/mcpserver"
	"github.com/codexec/codexec/internal/pgstore"
	"github.com/codexec/codexec/internal/scripts"
)

// retentionEvery is how often the log retention timer runs.
const retentionEvery = time.Hour

// warnLogUnwritable says loudly, at start-up, that the server runs without
// recording its history: tools work, their results carry log_error, and
// search_execution_logs answers LOG_UNAVAILABLE until the cause is fixed;
// nothing needs a restart then.
func warnLogUnwritable(err error) {
	slog.Error("EXECUTION LOG UNAVAILABLE: serving anyway, but executions are not recorded (or not searchable) "+
		"until this is fixed; logging resumes by itself, no restart needed", "err", err)
}

// buildHistory opens the script library and the execution-log index, hooks
// the index to the logger, and starts the index's catch-up and retention
// loop (stopped by App.Close).
func (a *App) buildHistory(ctx context.Context, cfg config.Config, deps *mcpserver.Deps) error {
	store, err := scripts.Open(cfg.ScriptsDir)
	if err != nil {
		return err
	}
	deps.Scripts = &scripts.Runner{Libraries: scripts.Files(store), Engine: a.Engine}
	if a.store != nil {
		deps.Scripts.Libraries = a.store.Scripts()
	}
	logger := a.logger
	idx := logindex.New(logger.Dir(), filepath.Join(logger.Dir(), logindex.FileName))
	if err := idx.Ready(); err != nil {
		warnLogUnwritable(err)
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
	if a.store != nil {
		a.runSharedRetention(ctx, cfg, deps)
	}
	return nil
}

// runSharedRetention serves the logs tools from the shared history and
// prunes it (one replica at a time) until App.Close. The local index
// above keeps pruning this server's own JSONL files.
func (a *App) runSharedRetention(ctx context.Context, cfg config.Config, deps *mcpserver.Deps) {
	hist := a.store.History()
	deps.Logs = hist
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	r := cfg.RetentionDays
	go func() {
		defer close(done)
		hist.Run(runCtx, pgstore.Retention{Logs: logindex.Retention{Success: r.Success, Failure: r.Failure, Session: r.Session},
			Sessions: pgstore.SessionRetention{CheckpointTTL: cfg.Checkpoint.TTL}}, retentionEvery)
	}()
	a.closers = append(a.closers, func() { cancel(); <-done })
}
