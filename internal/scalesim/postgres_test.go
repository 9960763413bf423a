package scalesim

import (
	"context"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/pgstore"
	"github.com/codexec/codexec/internal/pgtest"
	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

// TestScalePostgres runs the small configuration against the PostgreSQL
// registry and against the in-memory one: the outcomes must be identical
// (the two registries answer alike), and the transactions PostgreSQL
// counted must be the registry calls the simulation counted, so the
// model's store load is what the server sees.
func TestScalePostgres(t *testing.T) {
	srv := pgtest.Start(t)
	dsn := srv.NewDatabase(t)
	ctx := context.Background()
	cfg := small()
	want, err := Run(ctx, cfg, &sessionreg.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	admin, db := srv.DSN("postgres"), dbName(t, dsn)
	quiet(t, dsn)
	// Opening the store costs transactions of its own (the schema check):
	// measure them with an open and close that do nothing else.
	base := commits(t, admin, db)
	st, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	before := commits(t, admin, db)
	openCost := before - base
	st, err = pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := Run(ctx, cfg, st.Registry())
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL run in %v", time.Since(start).Round(time.Millisecond))
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("PostgreSQL and memory registries gave different runs (-memory +postgres):\n%s", d)
	}
	checkInvariants(t, cfg, got)
	calls := got.AuditReads
	for _, p := range got.Phases {
		for _, n := range p.Ops {
			calls += n
		}
	}
	// Beyond one transaction per call, pgx prepares each statement once
	// per connection (Parse and Describe outside a transaction are a
	// transaction of their own): six statements run outside MarkLost's
	// transaction, on each of the pool's connections (at most four).
	n := commits(t, admin, db) - before - openCost
	if extra := n - int64(calls); extra < 0 || extra > 6*4 {
		t.Errorf("PostgreSQL committed %d transactions, the simulation made %d registry calls", n, calls)
	}
	t.Logf("%d registry calls; PostgreSQL committed %d transactions (the rest: statement preparation)", calls, n)
}

// quiet creates the schema and turns autovacuum off on the registry's
// tables, whose workers' transactions would otherwise join the count.
func quiet(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	st, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, table := range []string{"sessions", "replicas"} {
		if _, err := conn.Exec(ctx, "ALTER TABLE "+table+" SET (autovacuum_enabled = false)"); err != nil {
			t.Fatal(err)
		}
	}
}

// dbName is the database a pgtest DSN names.
func dbName(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Database
}

// commits is the committed transactions of database db once no connection
// to it is left (a backend reports its counts at exit at the latest). It
// reads them through admin, another database, so reading adds none.
func commits(t *testing.T, admin, db string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for deadline := time.Now().Add(10 * time.Second); ; {
		var others int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, db).Scan(&others); err != nil {
			t.Fatal(err)
		}
		if others == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open", others)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var n int64
	if err := conn.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = $1`, db).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestScaleCheckpointsPostgres runs the small configuration with shared
// paused sessions against the PostgreSQL registry and the in-memory one:
// pausing, resuming a paused claim on another replica and closing a paused
// session give identical runs on both.
func TestScaleCheckpointsPostgres(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	ctx := context.Background()
	cfg := small()
	cfg.Checkpoints, cfg.BreakShare, cfg.Break, cfg.IdleTimeout = true, 0.02, 10*time.Minute, 5*time.Minute
	cfg.Auto, cfg.CheckpointBytes, cfg.Warmup = 10*time.Second, 1<<20, 10*time.Minute
	want, err := Run(ctx, cfg, &sessionreg.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Run(ctx, cfg, st.Registry())
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("PostgreSQL and memory registries gave different runs (-memory +postgres):\n%s", d)
	}
	checkInvariants(t, cfg, got)
	if r := got.Phase(PhaseRolling); r.ResumedElsewhere == 0 || got.Phase(PhaseSteady).Paused == 0 {
		t.Errorf("no pause in steady state or no resume elsewhere in the update: %+v", r.CheckpointCounts)
	}
}
