package pgstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestOpenConcurrently: replicas starting together on an empty database
// migrate it once (the advisory lock), and all of them start.
func TestOpenConcurrently(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			st, err := Open(context.Background(), dsn)
			if err == nil {
				st.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var applied int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM schema_migrations`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != len(ms) {
		t.Errorf("%d migrations recorded, want %d (each once)", applied, len(ms))
	}
}

// TestRetentionOneAtATime: while one replica holds the retention lock,
// another's pass is skipped, and runs once the lock is free.
func TestRetentionOneAtATime(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	ctx := context.Background()
	st, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	holder, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(lockRetention)); err != nil {
		t.Fatal(err)
	}
	r := st.History()
	if ran, err := r.RetainOnce(ctx, nowUTC(), Retention{Logs: retention}); err != nil || ran {
		t.Errorf("pass while another replica prunes: ran %v err %v, want skipped", ran, err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, int64(lockRetention)); err != nil {
		t.Fatal(err)
	}
	if ran, err := r.RetainOnce(ctx, nowUTC(), Retention{Logs: retention}); err != nil || !ran {
		t.Errorf("pass with the lock free: ran %v err %v, want run", ran, err)
	}
}

var retention = logindex.Retention{Success: 30, Failure: 90, Session: 90}

func nowUTC() time.Time { return time.Now().UTC() }
