package pgstore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/pgtest"
	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

// TestSessionRetention: a retention pass drops the checkpoint records of
// expired checkpoints and of lost sessions, the claims of paused sessions
// whose record is gone (after a grace) and the records of sessions lost
// longer than LostFor; it keeps everything a replica may still use, the
// local principal's and a context's name claims included.
func TestSessionRetention(t *testing.T) {
	st := openTest(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 20, 12, 0, 0, 0, time.UTC)
	reg, recs := st.Registry(), st.Records()
	tag := tenant.Tag("alice")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	claim := func(key, replica string, at time.Time, l sessionreg.Label) {
		must(reg.Claim(ctx, sessionreg.Owner{SessionID: key, Replica: sessionreg.Replica{ID: replica, Addr: "http://" + replica}, ClaimedAt: at, Label: l}))
	}
	paused := func(key string, at time.Time, l sessionreg.Label) {
		claim(key, "r-a", at, l)
		must(reg.Pause(ctx, key, "r-a", at))
	}
	record := func(owner, id string, taken time.Time) {
		name := id
		if t := tenant.Tag(owner); t != "" {
			name += "@" + t
		}
		must(recs.Put(ctx, name, checkpoint.Record{ID: id, Owner: owner, TakenAt: taken, Bytes: int64(100 + len(id))}))
	}
	day := 24 * time.Hour
	record("alice", "s-expired", now.Add(-8*day))
	paused(tag+"/s-expired", now.Add(-8*day), sessionreg.Label{})
	record("alice", "s-fresh", now.Add(-time.Hour))
	paused(tag+"/s-fresh", now.Add(-time.Hour), sessionreg.Label{})
	record("alice", "s-lost", now.Add(-time.Hour))
	claim(tag+"/s-lost", "r-dead", now.Add(-2*time.Hour), sessionreg.Label{})
	_, err := reg.MarkLost(ctx, "r-dead", now.Add(-time.Minute))
	must(err)
	claim(tag+"/s-old-lost", "r-gone", now.Add(-100*day), sessionreg.Label{})
	_, err = reg.MarkLost(ctx, "r-gone", now.Add(-91*day))
	must(err)
	paused(tag+"/s-orphan", now.Add(-2*time.Hour), sessionreg.Label{})
	paused(tag+"/s-pausing", now.Add(-10*time.Minute), sessionreg.Label{})
	record("alice", "ctx-7", now.Add(-time.Hour))
	paused(tag+"/ctx-7", now.Add(-2*time.Hour), sessionreg.Label{Kind: "context"})
	paused(tag+"/nb", now.Add(-2*time.Hour), sessionreg.Label{Kind: "context", Name: "nb", Of: "ctx-7"})
	record("local", "s-local", now.Add(-time.Hour))
	paused("/s-local", now.Add(-2*time.Hour), sessionreg.Label{})

	must(st.retainSessions(ctx, now, SessionRetention{LostFor: 90 * day, CheckpointTTL: 7 * day}))

	all, err := reg.List(ctx, "")
	must(err)
	var claims []string
	for _, o := range all {
		claims = append(claims, o.SessionID)
	}
	left, err := recs.List(ctx)
	must(err)
	var names []string
	for n := range left {
		names = append(names, n)
	}
	slices.Sort(names)
	wantClaims := []string{"/s-local", tag + "/ctx-7", tag + "/nb", tag + "/s-fresh", tag + "/s-lost", tag + "/s-pausing"}
	wantRecords := []string{"ctx-7@" + tag, "s-fresh@" + tag, "s-local"}
	if diff := cmp.Diff(wantClaims, claims); diff != "" {
		t.Errorf("registry after the pass (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantRecords, names); diff != "" {
		t.Errorf("checkpoint records after the pass (-want +got):\n%s", diff)
	}
	var total int64
	for _, r := range left {
		total += r.Bytes
	}
	if kept, err := recs.Total(ctx, ""); kept != total || err != nil {
		t.Errorf("kept total %d (%v) after the pass, the records left hold %d", kept, err, total)
	}
}

// TestSessionRetentionBounded: one pass deletes at most retainMaxRows of
// a kind, in batches; the next pass goes on.
func TestSessionRetentionBounded(t *testing.T) {
	st := openTest(t)
	ctx := context.Background()
	now := time.Now().UTC()
	const n = retainMaxRows + 500
	if _, err := st.pool.Exec(ctx, `INSERT INTO sessions (session_id, replica_id, replica_addr, claimed_at, lost_at)
		SELECT 't/s' || i, 'r-gone', 'http://r', $1, $1 FROM generate_series(1, $2) AS i`, now.Add(-100*24*time.Hour), n); err != nil {
		t.Fatal(err)
	}
	r := SessionRetention{LostFor: 90 * 24 * time.Hour}
	for pass, want := range []int{n - retainMaxRows, 0} {
		if err := st.retainSessions(ctx, now, r); err != nil {
			t.Fatal(err)
		}
		var left int
		if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM sessions`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left != want {
			t.Errorf("after pass %d: %d lost records left, want %d", pass+1, left, want)
		}
	}
}

// openTest opens a store on a new database of the test's PostgreSQL.
func openTest(t *testing.T) *Store {
	t.Helper()
	st, err := Open(context.Background(), pgtest.Start(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}
