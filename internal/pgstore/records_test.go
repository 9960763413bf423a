package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/s3store"
	"github.com/codexec/codexec/internal/s3store/s3test"
)

// TestCheckpointTotalAcrossReplicas: with records shared in PostgreSQL
// and checkpoints in one S3 bucket, CODEXEC_CHECKPOINT_MAX_TOTAL bounds
// every replica's checkpoints together: a replica that wrote little is
// refused when the others filled the room, replacing a checkpoint counts
// only the new one, and of replicas racing for the last room exactly one
// gets it.
func TestCheckpointTotalAcrossReplicas(t *testing.T) {
	st := openTest(t)
	srv := s3test.Start(t)
	ctx := context.Background()
	blobs, err := s3store.Open(ctx, s3store.Options{Endpoint: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey,
		Bucket: "codexec", Prefix: "checkpoints/", Create: true, TTL: time.Hour, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(blobs.Close)
	replica := func() *checkpoint.Keeper {
		return checkpoint.NewKeeper(blobs, checkpoint.KeeperOptions{Records: st.Records(), MaxBytes: 2000, MaxTotal: 3000})
	}
	a, b := replica(), replica()
	store := func(k *checkpoint.Keeper, name string, size int) error {
		_, err := k.Store(ctx, name, checkpoint.Record{ID: name, Owner: "alice", TakenAt: time.Now()}, bytes.Repeat([]byte("x"), size), "")
		return err
	}
	steps := []struct {
		name string
		err  error
	}{
		{"a: s1 1000", store(a, "s1", 1000)},
		{"b: s2 1000", store(b, "s2", 1000)},
		{"a: s3 1000, the total is full", store(a, "s3", 1000)},
		{"b: s4 500, refused although b wrote 1000", store(b, "s4", 500)},
		{"b: s2 replaced by 1000", store(b, "s2", 1000)},
	}
	want := []error{nil, nil, nil, checkpoint.ErrStoreFull, nil}
	for i, s := range steps {
		if !errors.Is(s.err, want[i]) || (want[i] == nil) != (s.err == nil) {
			t.Errorf("%s: %v, want %v", s.name, s.err, want[i])
		}
	}
	if err := st.Records().Delete(ctx, "s3"); err != nil {
		t.Fatal(err)
	}
	const racers = 6
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() { errs[i] = store(replica(), fmt.Sprintf("race-%d", i), 1000) })
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, checkpoint.ErrStoreFull):
			t.Errorf("racer %d: %v", i, err)
		}
	}
	total, err := st.Records().Total(ctx, "")
	if won != 1 || total != 3000 || err != nil {
		t.Errorf("racing for 1000 bytes of room: %d won, total %d bytes (%v), want 1 and 3000", won, total, err)
	}
	if err := st.Records().Delete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE checkpoint_records SET rec = jsonb_set(rec, '{bytes}', '10') WHERE name = 's2'`); err != nil {
		t.Fatal(err)
	}
	var sum int64
	if err := st.pool.QueryRow(ctx, `SELECT coalesce(sum((rec->>'bytes')::bigint), 0) FROM checkpoint_records`).Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if total, err := st.Records().Total(ctx, ""); total != sum || sum != 1010 || err != nil {
		t.Errorf("after a delete and an update: kept total %d (%v), records sum to %d, want 1010", total, err, sum)
	}
}
