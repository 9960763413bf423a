package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/codexec/codexec/internal/checkpoint"
)

// Records are the checkpoint records of paused sessions kept in the
// database (checkpoint.Records), so any replica resumes a session another
// one paused.
type Records struct{ s *Store }

// Records returns the store's checkpoint records.
func (s *Store) Records() *Records { return &Records{s} }

var _ checkpoint.Bounded = (*Records)(nil)

// Put implements checkpoint.Records.
func (r *Records) Put(ctx context.Context, name string, rec checkpoint.Record) error {
	return recordsErr(put(ctx, r.s.pool, name, rec))
}

// put writes name's record with db (the pool or a transaction); the
// triggers of checkpoint_records keep checkpoint_total.
func put(ctx context.Context, db interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, name string, rec checkpoint.Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, `INSERT INTO checkpoint_records (name, owner, id, ctx_name, rec) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, id = excluded.id, ctx_name = excluded.ctx_name, rec = excluded.rec`,
		name, rec.Owner, rec.ID, rec.Name, b)
	return err
}

// Total implements checkpoint.Bounded: one row (checkpoint_total) less
// except's record.
func (r *Records) Total(ctx context.Context, except string) (int64, error) {
	var n int64
	err := r.s.pool.QueryRow(ctx, `SELECT t.bytes - coalesce((SELECT (rec->>'bytes')::bigint FROM checkpoint_records WHERE name = $1), 0)
		FROM checkpoint_total t`, except).Scan(&n)
	return n, recordsErr(err)
}

// PutWithin implements checkpoint.Bounded: the upsert, whose trigger adds
// to checkpoint_total and locks its row until the commit, then the total,
// in one transaction, rolled back when over max. So writes of records
// serialize on that row for a statement and a commit each, and two
// replicas cannot both fit in the last room. A refusal is a
// *checkpoint.FullError.
func (r *Records) PutWithin(ctx context.Context, name string, rec checkpoint.Record, max int64) error {
	err := pgx.BeginFunc(ctx, r.s.pool, func(tx pgx.Tx) error {
		if err := put(ctx, tx, name, rec); err != nil {
			return err
		}
		var total int64
		if err := tx.QueryRow(ctx, `SELECT bytes FROM checkpoint_total`).Scan(&total); err != nil {
			return err
		}
		if total > max {
			return &checkpoint.FullError{Total: total - rec.Bytes}
		}
		return nil
	})
	if full := (*checkpoint.FullError)(nil); errors.As(err, &full) {
		return err
	}
	return recordsErr(err)
}

// Get implements checkpoint.Records: the record of the id first, else of
// the context so named.
func (r *Records) Get(ctx context.Context, owner, idOrName string) (checkpoint.Record, error) {
	var b []byte
	err := r.s.pool.QueryRow(ctx, `SELECT rec FROM checkpoint_records WHERE owner = $1 AND (id = $2 OR ctx_name = $2)
		ORDER BY id = $2 DESC, name COLLATE "C" LIMIT 1`, owner, idOrName).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return checkpoint.Record{}, fmt.Errorf("%w: %s", checkpoint.ErrNoRecord, idOrName)
	}
	if err != nil {
		return checkpoint.Record{}, recordsErr(err)
	}
	var rec checkpoint.Record
	return rec, recordsErr(json.Unmarshal(b, &rec))
}

// Delete implements checkpoint.Records.
func (r *Records) Delete(ctx context.Context, name string) error {
	_, err := r.s.pool.Exec(ctx, `DELETE FROM checkpoint_records WHERE name = $1`, name)
	return recordsErr(err)
}

// List implements checkpoint.Records.
func (r *Records) List(ctx context.Context) (map[string]checkpoint.Record, error) {
	rows, _ := r.s.pool.Query(ctx, `SELECT name, rec FROM checkpoint_records`)
	out := map[string]checkpoint.Record{}
	var name string
	var b []byte
	_, err := pgx.ForEachRow(rows, []any{&name, &b}, func() error {
		var rec checkpoint.Record
		if json.Unmarshal(b, &rec) == nil {
			out[name] = rec
		}
		return nil
	})
	return out, recordsErr(err)
}

func recordsErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("checkpoint records: %w", err)
}
