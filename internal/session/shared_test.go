package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/replicas"
	"github.com/codexec/codexec/internal/sessionckpt"
	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

// replicaManager is one replica's Manager: its own data dir, the blob
// store (one instance stands for the shared bucket: a DirStore indexes
// what it wrote itself) and records under shared, and claims in reg as
// replica id.
func replicaManager(tb testing.TB, dir, shared string, store checkpoint.Blobs, id string, reg sessionreg.Registry) *Manager {
	tb.Helper()
	eng, langs, log, opts := testEngine(tb, dir)
	set := replicas.New(replicas.Options{Self: sessionreg.Replica{ID: id, Addr: "http://" + id}, Registry: reg, Secret: "s", Lease: time.Minute})
	o := sessionckpt.Options{Records: checkpoint.DirRecords{Dir: filepath.Join(shared, "records")}, Shared: true}
	m := NewManager(Deps{Engine: eng, Languages: langs, Log: log, Checkpoints: store, Claims: set}, Options{MaxSessions: 20,
		DefaultTimeout: opts.DefaultTimeout, Output: opts.Output, PackagesDir: filepath.Join(opts.SandboxDir, ".packages"),
		SandboxMode: "subprocess", KillGrace: time.Second, Checkpoints: o})
	tb.Cleanup(m.Close)
	return m
}

// sharedStores is what replicas share: a registry, a directory for the
// paused-session records, and the blob store. It skips without python3.
func sharedStores(t *testing.T) (*sessionreg.Memory, string, *files.DirStore) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	shared := t.TempDir()
	store, err := files.NewDirStore(filepath.Join(shared, "checkpoints"), files.DirOptions{TTL: time.Hour, MaxBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return &sessionreg.Memory{}, shared, store
}

// TestSharedPaused: with shared records, a session paused by one Manager
// resumes in another with its state, only for its principal; two
// Managers resuming it at once make one live copy (the other is told
// another holds it); and after a pause the loser resumes it too.
func TestSharedPaused(t *testing.T) {
	reg, shared, store := sharedStores(t)
	ms := []*Manager{replicaManager(t, t.TempDir(), shared, store, "a", reg), replicaManager(t, t.TempDir(), shared, store, "b", reg)}
	alice, bob := tenant.With(context.Background(), "alice"), tenant.With(context.Background(), "bob")
	info, err := ms[0].Start(alice, StartRequest{Kind: KindSession, Language: "python"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, ms[0], alice, info.ID, "x = 41")
	if _, err := ms[0].Pause(alice, info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ms[1].Get(bob, info.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bob's Get of alice's paused session: %v", err)
	}
	for round := range 3 {
		errs := make([]error, len(ms))
		var wg sync.WaitGroup
		for i, m := range ms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = m.Get(alice, info.ID)
			}()
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("round %d: both Managers resumed the session", round)
			case err == nil:
				won = i
			case !errors.Is(err, sessionckpt.ErrHeldElsewhere):
				t.Fatalf("round %d, manager %d: %v", round, i, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: nobody resumed it: %v", round, errs)
		}
		if out := run(t, ms[won], alice, info.ID, "x += 1\nprint(x)").Stdout; strings.TrimSpace(out) != []string{"42", "43", "44"}[round] {
			t.Errorf("round %d: state %q", round, out)
		}
		if o, err := reg.Owner(context.Background(), replicas.Key("alice", info.ID)); err != nil || o.Replica.ID != []string{"a", "b"}[won] || o.PausedAt != nil {
			t.Errorf("round %d: registry %+v %v", round, o, err)
		}
		if _, err := ms[won].Pause(alice, info.ID); err != nil {
			t.Fatal(err)
		}
	}
	// Pausing a paused session keeps no copy of its record: after the
	// other Manager ran and paused it, this one resumes the newer state.
	if _, err := ms[0].Pause(alice, info.ID); err != nil {
		t.Fatal(err)
	}
	run(t, ms[1], alice, info.ID, "x += 100")
	if _, err := ms[1].Pause(alice, info.ID); err != nil {
		t.Fatal(err)
	}
	if out := run(t, ms[0], alice, info.ID, "print(x)").Stdout; out != "144\n" {
		t.Errorf("resumed after the other Manager's run: %q, want 144", out)
	}
	if _, err := ms[0].Pause(alice, info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ms[1].Stop(alice, info.ID, "closed", false); err != nil {
		t.Fatalf("closing the paused session elsewhere: %v", err)
	}
	if _, err := ms[0].Get(alice, info.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("a closed session: %v", err)
	}
	if _, err := reg.Owner(context.Background(), replicas.Key("alice", info.ID)); !errors.Is(err, sessionreg.ErrNotFound) {
		t.Errorf("a closed session's claim: %v", err)
	}
}

// TestSharedLostStaysLost: a session whose replica was declared dead
// (lost in the registry, or forgotten after that) is not resumed by
// another replica from a record of it, even while the first still runs
// it (a replica cut off from the registry).
func TestSharedLostStaysLost(t *testing.T) {
	reg, shared, store := sharedStores(t)
	a, b := replicaManager(t, t.TempDir(), shared, store, "a", reg), replicaManager(t, t.TempDir(), shared, store, "b", reg)
	alice := tenant.With(context.Background(), "alice")
	info, err := a.Start(alice, StartRequest{Kind: KindSession, Language: "python"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, a, alice, info.ID, "z = 1")
	// A fork checkpoints the live session: its record is in the shared store.
	if _, err := a.Fork(alice, info.ID, 1, false); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := reg.MarkLost(context.Background(), "a", now); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(alice, info.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("a lost session's record resumed elsewhere: %v", err)
	}
	if _, err := reg.ForgetLost(context.Background(), now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(alice, info.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("a forgotten lost session's record resumed elsewhere: %v", err)
	}
	if out := run(t, a, alice, info.ID, "print(z)").Stdout; out != "1\n" {
		t.Errorf("the first replica's copy: %q", out)
	}
}
