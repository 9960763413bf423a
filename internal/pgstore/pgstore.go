// Package pgstore keeps codexec's shared state in PostgreSQL, so several
// replicas see the same scripts, execution history and session registry:
// Store.Scripts (scripts.Libraries), Store.History (logindex.History) and
// Store.Registry (sessionreg.Registry). It gives the same answers as the
// embedded implementations for the same data; history search uses
// PostgreSQL full-text search (a GIN-indexed tsvector) over words made by
// the embedded index's rules (words.go).
//
// Open applies the embedded schema migrations (migrations/NNN_*.sql, in
// order, each once) under a session advisory lock, so replicas starting
// together migrate once. Retention (History.Run) runs on one replica at a
// time under a try-lock.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// connectTimeout bounds one connection attempt unless the DSN sets
// connect_timeout.
const connectTimeout = 10 * time.Second

// Store is an open PostgreSQL store. Close it when done.
type Store struct {
	pool    *pgxpool.Pool
	queries *queryTracer
}

// Queries is how many statements this store sent to PostgreSQL since Open
// (the metric codexec_store_queries_total).
func (s *Store) Queries() int64 { return s.queries.n.Load() }

// Open connects to dsn (a postgres:// URL or key=value string, as libpq
// reads it), checks the server answers and migrates the schema.
func Open(ctx context.Context, dsn string) (_ *Store, retErr error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: %s", strings.ReplaceAll(err.Error(), dsn, "<dsn>"))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = connectTimeout // no connect_timeout in the DSN: do not hang on a black hole
	}
	qc := &queryTracer{}
	cfg.ConnConfig.Tracer = qc
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer func() {
		if retErr != nil {
			pool.Close()
		}
	}()
	if err := pool.Ping(ctx); err != nil {
		return nil, fmt.Errorf("store: cannot reach PostgreSQL at %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	if err := migrate(ctx, pool); err != nil {
		return nil, fmt.Errorf("store: schema migration: %w", err)
	}
	return &Store{pool: pool, queries: qc}, nil
}

// Close closes every connection.
func (s *Store) Close() { s.pool.Close() }

// uniqueViolation reports a unique constraint failure, with its constraint.
func uniqueViolation(err error) (string, bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return pe.ConstraintName, true
	}
	return "", false
}
