package pgstore

import (
	"context"
	"log/slog"
	"time"

	"github.com/codexec/codexec/internal/logindex"
)

// lockRetention is the advisory lock key of a retention pass: one replica
// at a time prunes, the others skip the pass.
const lockRetention = lockMigrate + 1

// ApplyRetention implements logindex.History with the embedded rules:
// one-shot executions expire r.Success days (successful) or r.Failure days
// (the rest) after they ran, a whole UTC day at a time as the daily files
// do (logindex.RetentionCutoffs); a session's executions go together once
// the session's last one was recorded more than r.Session days before now.
func (h *History) ApplyRetention(ctx context.Context, now time.Time, r logindex.Retention) error {
	success, failure, days := logindex.RetentionCutoffs(now, r)
	tag, err := h.s.pool.Exec(ctx, `DELETE FROM executions WHERE coalesce(session_id, '') = '' AND executed_at < $1
		AND executed_at < CASE WHEN status = 'success' THEN $2::bigint ELSE $3::bigint END`,
		days.UnixMilli(), success.UnixMilli(), failure.UnixMilli())
	if err != nil {
		return unavailable(err)
	}
	if n := tag.RowsAffected(); n > 0 {
		slog.Info("log retention: dropped expired executions", "dropped", n)
	}
	tag, err = h.s.pool.Exec(ctx, `DELETE FROM executions WHERE session_id IN (
		SELECT session_id FROM executions WHERE coalesce(session_id, '') <> ''
		GROUP BY session_id HAVING max(written_at) < $1)`, now.AddDate(0, 0, -r.Session))
	if err != nil {
		return unavailable(err)
	}
	if n := tag.RowsAffected(); n > 0 {
		slog.Info("log retention: dropped expired session logs", "dropped", n)
	}
	return nil
}

// Retention is what a retention pass applies: the history's rules, and
// the registry's and the checkpoint records' (SessionRetention; LostFor 0
// takes Logs.Session days, the session logs' retention).
type Retention struct {
	Logs     logindex.Retention
	Sessions SessionRetention
}

// Run applies retention now and every interval until ctx ends, on one
// replica at a time: a pass whose try-lock another replica holds is
// skipped. Errors are logged, not fatal.
func (h *History) Run(ctx context.Context, r Retention, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if ran, err := h.RetainOnce(ctx, time.Now(), r); err != nil && ctx.Err() == nil {
			slog.Warn("log retention failed; retried at the next pass", "err", err)
		} else if !ran {
			slog.Debug("log retention: another replica is pruning; skipped")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RetainOnce applies retention as of now unless another replica is
// applying it (ran is false then): the history's, then the session
// registry's and the checkpoint records' (retainSessions), bounded per
// pass.
func (h *History) RetainOnce(ctx context.Context, now time.Time, r Retention) (ran bool, err error) {
	conn, err := h.s.pool.Acquire(ctx)
	if err != nil {
		return false, unavailable(err)
	}
	defer conn.Release()
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(lockRetention)).Scan(&ran); err != nil || !ran {
		return false, unavailable(err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(lockRetention))
	if err := h.ApplyRetention(ctx, now, r.Logs); err != nil {
		return true, err
	}
	if r.Sessions.LostFor <= 0 {
		r.Sessions.LostFor = now.Sub(now.AddDate(0, 0, -r.Logs.Session))
	}
	return true, h.s.retainSessions(ctx, now, r.Sessions)
}
