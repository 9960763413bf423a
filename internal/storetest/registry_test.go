package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/google/go-cmp/cmp"
)

// TestRegistry runs one sequence of registry calls against every store and
// checks each answer.
func TestRegistry(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a := sessionreg.Replica{ID: "replica-a", Addr: "10.0.0.1:8443"}
	b := sessionreg.Replica{ID: "replica-b", Addr: "10.0.0.2:8443"}
	owner := func(id string) func(context.Context, sessionreg.Registry) any {
		return func(ctx context.Context, r sessionreg.Registry) any { return ownerView(r.Owner(ctx, id)) }
	}
	claim := func(id string, rep sessionreg.Replica) func(context.Context, sessionreg.Registry) any {
		return func(ctx context.Context, r sessionreg.Registry) any {
			return errName(r.Claim(ctx, sessionreg.Owner{SessionID: id, Replica: rep, ClaimedAt: t0}))
		}
	}
	beat := func(rep sessionreg.Replica, at time.Time) func(context.Context, sessionreg.Registry) any {
		return func(ctx context.Context, r sessionreg.Registry) any { return errName(r.Heartbeat(ctx, rep, at)) }
	}
	expired := func(now time.Time) func(context.Context, sessionreg.Registry) any {
		return func(ctx context.Context, r sessionreg.Registry) any {
			reps, err := r.Expired(ctx, now, 30*time.Second)
			if err != nil {
				return err.Error()
			}
			return reps
		}
	}
	lost := t0.Add(time.Minute)
	steps := []struct {
		name string
		do   func(context.Context, sessionreg.Registry) any
		want any
	}{
		{"unknown session", owner("sess_1"), "not found"},
		{"heartbeat a", beat(a, t0), ""},
		{"heartbeat b", beat(b, t0), ""},
		{"claim by a", claim("sess_1", a), ""},
		{"claim again by a", claim("sess_1", a), ""},
		{"claim by b refused", claim("sess_1", b), "claimed"},
		{"claim another by b", claim("sess_2", b), ""},
		{"owner is a", owner("sess_1"), sessionreg.Owner{SessionID: "sess_1", Replica: a, ClaimedAt: t0}},
		{"nobody expired yet", expired(t0.Add(20 * time.Second)), []sessionreg.Replica{}},
		{"b renews", beat(b, t0.Add(25*time.Second)), ""},
		{"a expired, b not", expired(t0.Add(40 * time.Second)), []sessionreg.Replica{a}},
		{"release by the wrong replica is ignored", func(ctx context.Context, r sessionreg.Registry) any {
			return errName(r.Release(ctx, "sess_2", a.ID))
		}, ""},
		{"still owned by b", owner("sess_2"), sessionreg.Owner{SessionID: "sess_2", Replica: b, ClaimedAt: t0}},
		{"a marked lost", func(ctx context.Context, r sessionreg.Registry) any {
			n, err := r.MarkLost(ctx, a.ID, lost)
			return fmt.Sprintf("%d %s", n, errName(err))
		}, "1 "},
		{"lost session answers lost", func(ctx context.Context, r sessionreg.Registry) any {
			o, err := r.Owner(ctx, "sess_1")
			if err != nil {
				return err.Error()
			}
			return o.Lost().Error()
		}, "session lost (replica replica-a stopped at 2026-03-01T12:01:00Z)"},
		{"release after marking lost keeps the session lost", func(ctx context.Context, r sessionreg.Registry) any {
			if err := r.Release(ctx, "sess_1", a.ID); err != nil {
				return err.Error()
			}
			o, err := r.Owner(ctx, "sess_1")
			return fmt.Sprintf("%v %s", o.LostAt != nil, errName(err))
		}, "true "},
		{"a's lease is gone", expired(t0.Add(time.Hour)), []sessionreg.Replica{b}},
		{"a lost session cannot be claimed again", claim("sess_1", a), "claimed"},
		{"marking lost twice marks nothing", func(ctx context.Context, r sessionreg.Registry) any {
			n, err := r.MarkLost(ctx, a.ID, lost)
			return fmt.Sprintf("%d %s", n, errName(err))
		}, "0 "},
		{"lost sessions are kept until forgotten", func(ctx context.Context, r sessionreg.Registry) any {
			n, err := r.ForgetLost(ctx, lost)
			return fmt.Sprintf("%d %s", n, errName(err))
		}, "0 "},
		{"forget lost sessions", func(ctx context.Context, r sessionreg.Registry) any {
			n, err := r.ForgetLost(ctx, lost.Add(time.Second))
			return fmt.Sprintf("%d %s", n, errName(err))
		}, "1 "},
		{"forgotten session is unknown", owner("sess_1"), "not found"},
		{"release by owner", func(ctx context.Context, r sessionreg.Registry) any {
			return errName(r.Release(ctx, "sess_2", b.ID))
		}, ""},
		{"released session is unknown", owner("sess_2"), "not found"},
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

func errName(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, sessionreg.ErrClaimed):
		return "claimed"
	case errors.Is(err, sessionreg.ErrNotFound):
		return "not found"
	}
	return err.Error()
}

func ownerView(o sessionreg.Owner, err error) any {
	if err != nil {
		return errName(err)
	}
	return o
}

// TestRegistryList: one principal's records (keys <tag>/<id>) are listed
// by prefix, with their labels, lost ones included, in byte order; keys of
// other prefixes, even ones sharing the prefix's first characters, are not.
func TestRegistryList(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	lost := t0.Add(time.Minute)
	a := sessionreg.Replica{ID: "replica-a", Addr: "http://10.0.0.1:8080"}
	b := sessionreg.Replica{ID: "replica-b", Addr: "http://10.0.0.2:8080"}
	py := sessionreg.Label{Kind: "session", Language: "python"}
	ctx1 := sessionreg.Label{Kind: "context", Language: "node", Name: "notebook"}
	claims := []sessionreg.Owner{
		{SessionID: "t1/sess_2", Replica: b, ClaimedAt: t0, Label: py},
		{SessionID: "t1/ctx-1", Replica: a, ClaimedAt: t0.Add(time.Second), Label: ctx1},
		{SessionID: "t1/notebook", Replica: a, ClaimedAt: t0.Add(time.Second), Label: sessionreg.Label{Kind: "context", Language: "node", Name: "notebook", Of: "ctx-1"}},
		{SessionID: "t1/Zeta", Replica: b, ClaimedAt: t0, Label: py},
		{SessionID: "t10/sess_9", Replica: a, ClaimedAt: t0, Label: py},
		{SessionID: "t1x", Replica: a, ClaimedAt: t0, Label: py},
		{SessionID: "/sess_local", Replica: a, ClaimedAt: t0, Label: py},
	}
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			r := bk.open(t).registry
			ctx := context.Background()
			for _, c := range claims {
				if err := r.Claim(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := r.MarkLost(ctx, a.ID, lost); err != nil {
				t.Fatal(err)
			}
			got, err := r.List(ctx, "t1/")
			if err != nil {
				t.Fatal(err)
			}
			want := []sessionreg.Owner{
				{SessionID: "t1/Zeta", Replica: b, ClaimedAt: t0, Label: py},
				{SessionID: "t1/ctx-1", Replica: a, ClaimedAt: t0.Add(time.Second), LostAt: &lost, Label: ctx1},
				{SessionID: "t1/notebook", Replica: a, ClaimedAt: t0.Add(time.Second), LostAt: &lost, Label: claims[2].Label},
				{SessionID: "t1/sess_2", Replica: b, ClaimedAt: t0, Label: py},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("List(t1/): (-want +got)\n%s", diff)
			}
			if got, err := r.List(ctx, "/"); err != nil || len(got) != 1 || got[0].SessionID != "/sess_local" {
				t.Errorf("List(/): %v %v, want the local principal's one record", got, err)
			}
			if got, err := r.List(ctx, "t2/"); err != nil || len(got) != 0 || got == nil {
				t.Errorf("List(t2/): %#v %v, want an empty list", got, err)
			}
			if o, err := r.Owner(ctx, "t1/sess_2"); err != nil || o.Label != py {
				t.Errorf("Owner keeps the label: %+v %v", o, err)
			}
		})
	}
}
