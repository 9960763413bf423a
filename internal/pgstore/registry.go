package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/jackc/pgx/v5"
)

// Registry is the session registry kept in the database, shared by every
// replica using the store (sessionreg.Registry).
type Registry struct{ s *Store }

// Registry returns the store's session registry.
func (s *Store) Registry() *Registry { return &Registry{s} }

var _ sessionreg.Registry = (*Registry)(nil)

// Heartbeat implements sessionreg.Registry.
func (g *Registry) Heartbeat(ctx context.Context, r sessionreg.Replica, at time.Time) error {
	_, err := g.s.pool.Exec(ctx, `INSERT INTO replicas (id, addr, last_seen) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET addr = excluded.addr, last_seen = excluded.last_seen`, r.ID, r.Addr, at.UTC())
	return registryErr(err)
}

// Claim implements sessionreg.Registry.
func (g *Registry) Claim(ctx context.Context, c sessionreg.Owner) error {
	l := c.Label
	tag, err := g.s.pool.Exec(ctx, `INSERT INTO sessions (session_id, replica_id, replica_addr, claimed_at, kind, language, name, of_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (session_id) DO UPDATE
		SET replica_id = excluded.replica_id, replica_addr = excluded.replica_addr, claimed_at = excluded.claimed_at, paused_at = NULL,
			kind = excluded.kind, language = excluded.language, name = excluded.name, of_id = excluded.of_id
		WHERE sessions.paused_at IS NOT NULL AND sessions.lost_at IS NULL`,
		c.SessionID, c.Replica.ID, c.Replica.Addr, c.ClaimedAt.UTC(), l.Kind, l.Language, l.Name, l.Of)
	if err != nil || tag.RowsAffected() == 1 {
		return registryErr(err)
	}
	o, err := g.Owner(ctx, c.SessionID)
	if err != nil {
		return err
	}
	if o.Replica.ID != c.Replica.ID || o.LostAt != nil {
		return fmt.Errorf("%w: %s", sessionreg.ErrClaimed, c.SessionID)
	}
	return nil
}

// ownerColumns are the columns scanOwner reads, in its order.
const ownerColumns = `session_id, replica_id, replica_addr, claimed_at, lost_at, paused_at, kind, language, name, of_id`

// scanOwner reads one record selected with ownerColumns.
func scanOwner(row pgx.Row) (sessionreg.Owner, error) {
	var o sessionreg.Owner
	err := row.Scan(&o.SessionID, &o.Replica.ID, &o.Replica.Addr, &o.ClaimedAt, &o.LostAt, &o.PausedAt,
		&o.Label.Kind, &o.Label.Language, &o.Label.Name, &o.Label.Of)
	o.ClaimedAt = o.ClaimedAt.UTC()
	if o.LostAt != nil {
		t := o.LostAt.UTC()
		o.LostAt = &t
	}
	if o.PausedAt != nil {
		t := o.PausedAt.UTC()
		o.PausedAt = &t
	}
	return o, err
}

// Owner implements sessionreg.Registry.
func (g *Registry) Owner(ctx context.Context, sessionID string) (sessionreg.Owner, error) {
	o, err := scanOwner(g.s.pool.QueryRow(ctx, `SELECT `+ownerColumns+` FROM sessions WHERE session_id = $1`, sessionID))
	if errors.Is(err, pgx.ErrNoRows) {
		return sessionreg.Owner{}, fmt.Errorf("%w: %s", sessionreg.ErrNotFound, sessionID)
	}
	if err != nil {
		return sessionreg.Owner{}, registryErr(err)
	}
	return o, nil
}

// List implements sessionreg.Registry: a range scan of the sessions_key
// index (byte order), from prefix up to prefix followed by the highest
// code point (ids are never that long a stretch of it).
func (g *Registry) List(ctx context.Context, prefix string) ([]sessionreg.Owner, error) {
	rows, _ := g.s.pool.Query(ctx, `SELECT `+ownerColumns+` FROM sessions
		WHERE session_id COLLATE "C" >= $1 AND session_id COLLATE "C" < $2 ORDER BY session_id COLLATE "C"`,
		prefix, prefix+string(utf8.MaxRune))
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sessionreg.Owner, error) { return scanOwner(r) })
	if out == nil {
		out = []sessionreg.Owner{}
	}
	return out, registryErr(err)
}

// Release implements sessionreg.Registry.
func (g *Registry) Release(ctx context.Context, sessionID, replicaID string) error {
	_, err := g.s.pool.Exec(ctx, `DELETE FROM sessions WHERE session_id = $1 AND replica_id = $2 AND lost_at IS NULL AND paused_at IS NULL`,
		sessionID, replicaID)
	return registryErr(err)
}

// Pause implements sessionreg.Registry.
func (g *Registry) Pause(ctx context.Context, sessionID, replicaID string, at time.Time) error {
	_, err := g.s.pool.Exec(ctx, `UPDATE sessions SET paused_at = $3
		WHERE session_id = $1 AND replica_id = $2 AND lost_at IS NULL AND paused_at IS NULL`, sessionID, replicaID, at.UTC())
	return registryErr(err)
}

// MarkLost implements sessionreg.Registry, in one transaction.
func (g *Registry) MarkLost(ctx context.Context, replicaID string, at time.Time) (int, error) {
	var n int64
	err := pgx.BeginFunc(ctx, g.s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE sessions SET lost_at = $2 WHERE replica_id = $1 AND lost_at IS NULL AND paused_at IS NULL`, replicaID, at.UTC())
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `DELETE FROM replicas WHERE id = $1`, replicaID)
		return err
	})
	return int(n), registryErr(err)
}

// ForgetLost implements sessionreg.Registry.
func (g *Registry) ForgetLost(ctx context.Context, before time.Time) (int, error) {
	tag, err := g.s.pool.Exec(ctx, `DELETE FROM sessions WHERE lost_at < $1`, before.UTC())
	return int(tag.RowsAffected()), registryErr(err)
}

// Expired implements sessionreg.Registry.
func (g *Registry) Expired(ctx context.Context, now time.Time, lease time.Duration) ([]sessionreg.Replica, error) {
	rows, _ := g.s.pool.Query(ctx, `SELECT id, addr FROM replicas WHERE last_seen < $1 ORDER BY id COLLATE "C"`, now.Add(-lease).UTC())
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sessionreg.Replica, error) {
		var x sessionreg.Replica
		return x, r.Scan(&x.ID, &x.Addr)
	})
	if out == nil {
		out = []sessionreg.Replica{}
	}
	return out, registryErr(err)
}

func registryErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("session registry: %w", err)
}
