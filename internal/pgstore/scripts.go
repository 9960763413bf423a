package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/scripts"
	"github.com/codexec/codexec/internal/tenant"
	"github.com/jackc/pgx/v5"
)

// Scripts returns the script libraries kept in the database, one per
// principal. A Script from it has no Path: its code is in no file.
func (s *Store) Scripts() scripts.Libraries { return libraries{s} }

type libraries struct{ s *Store }

func (l libraries) For(ctx context.Context) (scripts.Library, error) {
	return library{s: l.s, owner: tenant.From(ctx)}, nil
}

// library is one principal's scripts.
type library struct {
	s     *Store
	owner string
}

// saveTries bounds retries of a Save that raced another replica's first
// save of the same name.
const saveTries = 3

// Save implements scripts.Library: the current row moves to
// script_versions and in becomes the current version, in one transaction.
func (l library) Save(ctx context.Context, in scripts.SaveInput) (scripts.Script, error) {
	in, err := scripts.Prepare(in)
	if err != nil {
		return scripts.Script{}, err
	}
	for try := 1; ; try++ {
		err = pgx.BeginFunc(ctx, l.s.pool, func(tx pgx.Tx) error { return l.save(ctx, tx, in) })
		if _, dup := uniqueViolation(err); !dup || try == saveTries {
			break
		}
	}
	if err != nil {
		return scripts.Script{}, fmt.Errorf("scripts: %w", err)
	}
	return l.Get(ctx, in.Name, 0)
}

func (l library) save(ctx context.Context, tx pgx.Tx, in scripts.SaveInput) error {
	now := time.Now().UTC()
	m := scripts.Meta{ScriptID: execlog.NewID("script_"), Name: in.Name, Description: in.Description, Language: in.Language,
		Tags: in.Tags, Packages: in.Packages, SourceExecutionID: in.SourceExecutionID, Version: 1, CreatedAt: now, UpdatedAt: now}
	old, found, err := l.current(ctx, tx, in.Name, true)
	if err != nil {
		return err
	}
	if found {
		if _, err := tx.Exec(ctx, `INSERT INTO script_versions (owner, name, version, meta, code) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (owner, name, version) DO UPDATE SET meta = excluded.meta, code = excluded.code`,
			l.owner, in.Name, old.Version, old.Meta, old.Code); err != nil {
			return err
		}
		m.ScriptID, m.CreatedAt, m.Version = old.ScriptID, old.CreatedAt, old.Version+1
		m.LastRunAt, m.RunCount, m.LastRunSuccess = old.LastRunAt, old.RunCount, old.LastRunSuccess
	}
	// A first save is a plain INSERT: when another replica's first save of
	// the name wins the race, this one fails (unique violation) and Save
	// retries it as a second version instead of overwriting the first.
	sql := `INSERT INTO scripts (owner, name, version, meta, code) VALUES ($1, $2, $3, $4, $5)`
	if found {
		sql = `UPDATE scripts SET version = $3, meta = $4, code = $5 WHERE owner = $1 AND name = $2`
	}
	_, err = tx.Exec(ctx, sql, l.owner, in.Name, m.Version, m, in.Code)
	return err
}

// current reads the current version of name (locked for update when
// lock is set); found is false when there is none.
func (l library) current(ctx context.Context, q pgx.Tx, name string, lock bool) (scripts.Script, bool, error) {
	sql := `SELECT meta, code FROM scripts WHERE owner = $1 AND name = $2`
	if lock {
		sql += ` FOR UPDATE`
	}
	var sc scripts.Script
	err := q.QueryRow(ctx, sql, l.owner, name).Scan(&sc.Meta, &sc.Code)
	if errors.Is(err, pgx.ErrNoRows) {
		return scripts.Script{}, false, nil
	}
	return sc, err == nil, err
}

// Get implements scripts.Library.
func (l library) Get(ctx context.Context, name string, version int) (scripts.Script, error) {
	if err := scripts.ValidateName(name); err != nil {
		return scripts.Script{}, err
	}
	var sc scripts.Script
	err := pgx.BeginTxFunc(ctx, l.s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var err error
		sc, err = l.get(ctx, tx, name, version)
		return err
	})
	return sc, err
}

func (l library) get(ctx context.Context, tx pgx.Tx, name string, version int) (scripts.Script, error) {
	cur, found, err := l.current(ctx, tx, name, false)
	if err != nil {
		return scripts.Script{}, fmt.Errorf("scripts: %w", err)
	}
	if !found {
		return scripts.Script{}, fmt.Errorf("%w: %s", scripts.ErrNotFound, name)
	}
	rows, _ := tx.Query(ctx, `SELECT version FROM script_versions WHERE owner = $1 AND name = $2 ORDER BY version`, l.owner, name)
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return scripts.Script{}, fmt.Errorf("scripts: %w", err)
	}
	cur.Versions = append(versions, cur.Version)
	if version == 0 || version == cur.Version {
		return cur, nil
	}
	if !slices.Contains(versions, version) {
		return scripts.Script{}, fmt.Errorf("%w: %s has no version %d (versions: %v)", scripts.ErrNotFound, name, version, cur.Versions)
	}
	var old scripts.Script
	if err := tx.QueryRow(ctx, `SELECT meta, code FROM script_versions WHERE owner = $1 AND name = $2 AND version = $3`,
		l.owner, name, version).Scan(&old.Meta, &old.Code); err != nil {
		return scripts.Script{}, fmt.Errorf("scripts: %w", err)
	}
	old.Version, old.Versions = version, cur.Versions
	return old, nil
}

// List implements scripts.Library (names sorted bytewise, as the files').
func (l library) List(ctx context.Context, lang, tag string) ([]scripts.Meta, error) {
	rows, _ := l.s.pool.Query(ctx, `SELECT meta FROM scripts WHERE owner = $1 ORDER BY name COLLATE "C"`, l.owner)
	all, err := pgx.CollectRows(rows, pgx.RowTo[scripts.Meta])
	if err != nil {
		return nil, fmt.Errorf("scripts: %w", err)
	}
	return scripts.Filter(all, lang, tag), nil
}

// Search implements scripts.Library.
func (l library) Search(ctx context.Context, query string) ([]scripts.Match, error) {
	if _, err := scripts.Rank(nil, query); err != nil {
		return nil, err
	}
	all, err := l.List(ctx, "", "")
	if err != nil {
		return nil, err
	}
	return scripts.Rank(all, query)
}

// RecordRun implements scripts.Library.
func (l library) RecordRun(ctx context.Context, name string, at time.Time, success bool) error {
	err := pgx.BeginFunc(ctx, l.s.pool, func(tx pgx.Tx) error {
		cur, found, err := l.current(ctx, tx, name, true)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: %s", scripts.ErrNotFound, name)
		}
		at = at.UTC()
		cur.RunCount++
		cur.LastRunAt, cur.LastRunSuccess = &at, &success
		_, err = tx.Exec(ctx, `UPDATE scripts SET meta = $3 WHERE owner = $1 AND name = $2`, l.owner, name, cur.Meta)
		return err
	})
	return err
}
