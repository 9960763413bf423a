package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/sessionreg"
)

// TestRegistryPaused: a paused session is held by nobody: its replica can
// neither release nor lose it, any replica may claim it (then it is that
// one's), and a paused record cannot be paused by another replica.
func TestRegistryPaused(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	paused := t0.Add(time.Minute)
	a := sessionreg.Replica{ID: "replica-a", Addr: "http://10.0.0.1:8080"}
	b := sessionreg.Replica{ID: "replica-b", Addr: "http://10.0.0.2:8080"}
	py := sessionreg.Label{Kind: "session", Language: "python"}
	claim := func(rep sessionreg.Replica, at time.Time) func(context.Context, sessionreg.Registry) any {
		return func(ctx context.Context, r sessionreg.Registry) any {
			return errName(r.Claim(ctx, sessionreg.Owner{SessionID: "t/sess_1", Replica: rep, ClaimedAt: at, Label: py}))
		}
	}
	pause := func(rep sessionreg.Replica) func(context.Context, sessionreg.Registry) any {
		return func(ctx context.Context, r sessionreg.Registry) any {
			return errName(r.Pause(ctx, "t/sess_1", rep.ID, paused))
		}
	}
	owner := func(ctx context.Context, r sessionreg.Registry) any { return ownerView(r.Owner(ctx, "t/sess_1")) }
	markLost := func(rep sessionreg.Replica) func(context.Context, sessionreg.Registry) any {
		return func(ctx context.Context, r sessionreg.Registry) any {
			n, err := r.MarkLost(ctx, rep.ID, paused.Add(time.Minute))
			return fmt.Sprintf("%d %s", n, errName(err))
		}
	}
	steps := []struct {
		name string
		do   func(context.Context, sessionreg.Registry) any
		want any
	}{
		{"claim by a", claim(a, t0), ""},
		{"pause by b ignored", pause(b), ""},
		{"still a's, not paused", owner, sessionreg.Owner{SessionID: "t/sess_1", Replica: a, ClaimedAt: t0, Label: py}},
		{"pause by a", pause(a), ""},
		{"paused, nobody's", owner, sessionreg.Owner{SessionID: "t/sess_1", Replica: a, ClaimedAt: t0, PausedAt: &paused, Label: py}},
		{"a's release leaves it paused", func(ctx context.Context, r sessionreg.Registry) any {
			if err := r.Release(ctx, "t/sess_1", a.ID); err != nil {
				return err.Error()
			}
			o, err := r.Owner(ctx, "t/sess_1")
			return fmt.Sprintf("%v %s", o.PausedAt != nil, errName(err))
		}, "true "},
		{"a's drain does not lose it", markLost(a), "0 "},
		{"b claims it", claim(b, paused), ""},
		{"now b's, live", owner, sessionreg.Owner{SessionID: "t/sess_1", Replica: b, ClaimedAt: paused, Label: py}},
		{"a cannot take it back", claim(a, paused), "claimed"},
		{"b pauses", pause(b), ""},
		{"a resumes it", claim(a, paused.Add(time.Second)), ""},
		{"a loses it when it stops", markLost(a), "1 "},
		{"a lost session is not claimed", claim(b, paused), "claimed"},
	}
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			r := bk.open(t).registry
			for _, st := range steps {
				if diff := cmp.Diff(st.want, st.do(context.Background(), r)); diff != "" {
					t.Errorf("%s: (-want +got)\n%s", st.name, diff)
				}
			}
		})
	}
}

// TestRegistryPausedRace: replicas racing to claim one paused session
// resolve to one winner; every other claim is ErrClaimed.
func TestRegistryPausedRace(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			r := bk.open(t).registry
			ctx := context.Background()
			a := sessionreg.Replica{ID: "a", Addr: "http://a"}
			if err := r.Claim(ctx, sessionreg.Owner{SessionID: "t/s", Replica: a, ClaimedAt: t0}); err != nil {
				t.Fatal(err)
			}
			if err := r.Pause(ctx, "t/s", a.ID, t0); err != nil {
				t.Fatal(err)
			}
			const n = 8
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rep := sessionreg.Replica{ID: fmt.Sprintf("r%d", i), Addr: "http://r"}
					errs[i] = r.Claim(ctx, sessionreg.Owner{SessionID: "t/s", Replica: rep, ClaimedAt: t0})
				}()
			}
			wg.Wait()
			won := -1
			for i, err := range errs {
				switch {
				case err == nil && won >= 0:
					t.Fatalf("two winners: r%d and r%d", won, i)
				case err == nil:
					won = i
				case !errors.Is(err, sessionreg.ErrClaimed):
					t.Fatalf("r%d: %v", i, err)
				}
			}
			o, err := r.Owner(ctx, "t/s")
			if won < 0 || err != nil || o.Replica.ID != fmt.Sprintf("r%d", won) || o.PausedAt != nil {
				t.Fatalf("winner r%d, owner %+v %v", won, o, err)
			}
		})
	}
}

// TestRecords: checkpoint records by name, found by their principal's id
// or context name, another principal's never.
func TestRecords(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	one := checkpoint.Record{ID: "sess_1", Owner: "alice", Kind: "session", Language: "python", StartedAt: t0, LastActivity: t0,
		Executions: 3, Blob: "ck_1", Bytes: 100, TakenAt: t0, Report: checkpoint.Report{Values: []string{"x"}}}
	ctxRec := checkpoint.Record{ID: "ctx-1", Owner: "alice", Kind: "context", Language: "node", Name: "notebook",
		StartedAt: t0, LastActivity: t0, Blob: "ck_2", Bytes: 50, TakenAt: t0, Auto: true}
	bob := one
	bob.Owner, bob.Blob = "bob", "ck_3"
	get := func(ctx context.Context, rs checkpoint.Records, owner, id string) string {
		r, err := rs.Get(ctx, owner, id)
		switch {
		case errors.Is(err, checkpoint.ErrNoRecord):
			return "none"
		case err != nil:
			return err.Error()
		}
		return r.Owner + " " + r.ID + " " + r.Blob
	}
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			rs := bk.open(t).records
			ctx := context.Background()
			if got := get(ctx, rs, "alice", "sess_1"); got != "none" {
				t.Fatalf("empty store: %s", got)
			}
			for name, r := range map[string]checkpoint.Record{"sess_1@a": one, "ctx-1@a": ctxRec, "sess_1@b": bob} {
				if err := rs.Put(ctx, name, r); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range []struct{ owner, id, want string }{
				{"alice", "sess_1", "alice sess_1 ck_1"},
				{"bob", "sess_1", "bob sess_1 ck_3"},
				{"alice", "notebook", "alice ctx-1 ck_2"},
				{"alice", "ctx-1", "alice ctx-1 ck_2"},
				{"bob", "notebook", "none"},
				{"carol", "sess_1", "none"},
			} {
				if got := get(ctx, rs, c.owner, c.id); got != c.want {
					t.Errorf("Get(%s, %s) = %q, want %q", c.owner, c.id, got, c.want)
				}
			}
			all, err := rs.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]checkpoint.Record{"sess_1@a": one, "ctx-1@a": ctxRec, "sess_1@b": bob}, all); diff != "" {
				t.Errorf("List: (-want +got)\n%s", diff)
			}
			newer := one
			newer.Blob = "ck_4"
			if err := rs.Put(ctx, "sess_1@a", newer); err != nil {
				t.Fatal(err)
			}
			if got := get(ctx, rs, "alice", "sess_1"); got != "alice sess_1 ck_4" {
				t.Errorf("after replacing: %s", got)
			}
			for _, n := range []string{"sess_1@a", "sess_1@a", "nothing"} {
				if err := rs.Delete(ctx, n); err != nil {
					t.Fatal(err)
				}
			}
			if got := get(ctx, rs, "alice", "sess_1"); got != "none" {
				t.Errorf("after delete: %s", got)
			}
		})
	}
}
