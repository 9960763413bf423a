package pgstore

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// SessionRetention says how long the registry and the checkpoint records
// keep what no replica will use again.
type SessionRetention struct {
	// LostFor is how long a lost session's record is kept after it was
	// marked lost (a call for it answers "lost" meanwhile, "not found"
	// after).
	LostFor time.Duration
	// CheckpointTTL is how long a checkpoint is kept in the blob store
	// (CODEXEC_CHECKPOINT_TTL): a record of one taken longer ago names a
	// checkpoint that is gone. 0: records are not expired by age.
	CheckpointTTL time.Duration
}

// Bounds of one retention pass: each kind of record is deleted
// retainBatch rows per statement, at most retainMaxRows per pass, so a
// pass after a long outage holds no long lock and the next pass goes on.
const (
	retainBatch   = 1000
	retainMaxRows = 20 * retainBatch
)

// orphanGrace is how long a paused session's claim may be without a
// checkpoint record before it is dropped: a record is written before its
// claim is marked paused, so only a claim whose record was deleted (its
// checkpoint expired, or the session was closed) is without one for long.
const orphanGrace = time.Hour

// recordKeySQL is the registry key (tenant tag "/" id, replicas.Key) of
// the session of a checkpoint record in table alias c: its name is the id,
// followed by "@" and the owner's tag unless the owner is the local one.
const recordKeySQL = `(CASE WHEN strpos(c.name, '@') > 0 THEN split_part(c.name, '@', 2) ELSE '' END || '/' || c.id)`

// claimRecordSQL is the name of the checkpoint record of the session a
// registry row (alias s) stands for: the row's own id, or for a context's
// name the id it names.
const claimRecordSQL = `(CASE WHEN s.of_id <> '' THEN s.of_id ELSE substr(s.session_id, strpos(s.session_id, '/') + 1) END ||
	CASE WHEN split_part(s.session_id, '/', 1) <> '' THEN '@' || split_part(s.session_id, '/', 1) ELSE '' END)`

// retainSessions drops, as of now: the checkpoint records whose checkpoint
// expired, and those of sessions lost with their replica (an automatic
// checkpoint of a replica that stopped is never resumed); the claims of
// paused sessions whose checkpoint expired or whose record is gone; and
// the records of sessions lost more than r.LostFor ago. The checkpoints
// themselves expire in the blob store by its TTL.
func (s *Store) retainSessions(ctx context.Context, now time.Time, r SessionRetention) error {
	steps := []struct {
		what, sql string
		arg       any
	}{
		{"checkpoint records of expired checkpoints", `DELETE FROM checkpoint_records WHERE name IN (
			SELECT name FROM checkpoint_records WHERE (rec->>'taken_at')::timestamptz < $1 LIMIT $2)`, now.Add(-r.CheckpointTTL)},
		{"checkpoint records of lost sessions", `DELETE FROM checkpoint_records WHERE name IN (
			SELECT c.name FROM checkpoint_records c JOIN sessions s ON s.session_id = ` + recordKeySQL + `
			WHERE s.lost_at IS NOT NULL AND s.lost_at < $1 LIMIT $2)`, now},
		{"paused sessions' claims without a checkpoint", `DELETE FROM sessions WHERE session_id IN (
			SELECT s.session_id FROM sessions s WHERE s.paused_at < $1 AND s.lost_at IS NULL
			AND NOT EXISTS (SELECT 1 FROM checkpoint_records c WHERE c.name = ` + claimRecordSQL + `) LIMIT $2)`, now.Add(-orphanGrace)},
		{"lost sessions' records", `DELETE FROM sessions WHERE session_id IN (
			SELECT session_id FROM sessions WHERE lost_at < $1 LIMIT $2)`, now.Add(-r.LostFor)},
	}
	for _, st := range steps {
		if st.what == steps[0].what && r.CheckpointTTL <= 0 {
			continue
		}
		n, err := s.deleteBatched(ctx, st.sql, st.arg)
		if err != nil {
			return fmt.Errorf("session retention (%s): %w", st.what, err)
		}
		if n > 0 {
			slog.Info("session retention: dropped "+st.what, "rows", n)
		}
	}
	return nil
}

// deleteBatched runs the DELETE q (its $1 is arg, $2 the batch size)
// until a batch deletes fewer than retainBatch rows or retainMaxRows are
// gone, and returns how many it deleted.
func (s *Store) deleteBatched(ctx context.Context, q string, arg any) (int64, error) {
	var total int64
	for total < retainMaxRows {
		tag, err := s.pool.Exec(ctx, q, arg, retainBatch)
		if err != nil {
			return total, err
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < retainBatch {
			break
		}
	}
	return total, nil
}
