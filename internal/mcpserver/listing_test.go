package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/codexec/codexec/internal/mcpserver/sessiontools"
	"github.com/codexec/codexec/internal/replicas"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

const testSecret = "listing-test-secret-0123"

// listCounter is the in-memory registry, counting List calls.
type listCounter struct {
	sessionreg.Memory
	lists atomic.Int32
}

func (c *listCounter) List(ctx context.Context, prefix string) ([]sessionreg.Owner, error) {
	c.lists.Add(1)
	return c.Memory.List(ctx, prefix)
}

// replicaAt serves h behind the hop of replica id, on the shared registry.
func replicaAt(t *testing.T, reg sessionreg.Registry, id string, h http.Handler) (*replicas.Set, sessionreg.Replica) {
	t.Helper()
	set := replicas.New(replicas.Options{Self: sessionreg.Replica{ID: id}, Registry: reg, Secret: testSecret, Lease: time.Minute})
	srv := httptest.NewServer(set.Handler(h, 1<<20))
	t.Cleanup(srv.Close)
	set.SetAddr(srv.URL)
	if err := set.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return set, set.Self()
}

// TestElsewhere: a replica's listing asks each other live replica holding
// one of the caller's sessions, once, as the caller; it shows lost records
// as lost, a context's name record not at all, another principal's never,
// and the records of a replica that does not answer as unreachable after
// PeerListTimeout; a listing that came over the hop asks nobody.
func TestElsewhere(t *testing.T) {
	reg := &listCounter{}
	answer := `{"content":[],"structuredContent":{"sessions":[{"session_id":"s-b","replica":"b"}]}}`
	var asked atomic.Int32
	_, b := replicaAt(t, reg, "b", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if asked.Add(1); tenant.From(r.Context()) != "alice" || !strings.Contains(string(body), `"name":"list_sessions"`) {
			t.Errorf("b was asked %s as %q", body, tenant.From(r.Context()))
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":`+answer+`}`)
	}))
	_, c := replicaAt(t, reg, "c", http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	a, self := replicaAt(t, reg, "a", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	pl := peers{a}
	here := make(chan sessiontools.Remote, 1)
	_, hop := replicaAt(t, reg, "a-hop", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rem, _ := peers{a}.Elsewhere(r.Context(), "list_sessions", nil) // as a's listing tool, served for the hop
		here <- rem
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	claim := func(p, id string, r sessionreg.Replica, l sessionreg.Label) {
		if err := reg.Claim(ctx, sessionreg.Owner{SessionID: replicas.Key(p, id), Replica: r, ClaimedAt: t0, Label: l}); err != nil {
			t.Fatal(err)
		}
	}
	py := sessionreg.Label{Kind: "session", Language: "python"}
	claim("alice", "s-a", self, py)
	claim("alice", "s-b", b, py)
	claim("alice", "ctx-c", c, sessionreg.Label{Kind: "context", Language: "python", Name: "nb"})
	claim("alice", "nb", c, sessionreg.Label{Kind: "context", Language: "python", Name: "nb", Of: "ctx-c"})
	claim("alice", "s-d", sessionreg.Replica{ID: "d", Addr: "http://127.0.0.1:1"}, py)
	claim("bob", "s-b2", b, py)
	run := sessionreg.Label{Kind: runs.LabelKind, Name: "execute_code"}
	claim("alice", "exec_d", sessionreg.Replica{ID: "d", Addr: "http://127.0.0.1:1"}, run)
	if _, err := reg.MarkLost(ctx, "d", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}

	begin := time.Now()
	got, err := pl.Elsewhere(tenant.With(ctx, "alice"), "list_sessions", nil)
	took := time.Since(begin)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got.Unlisted, func(x, y sessiontools.Unlisted) int { return strings.Compare(x.ID, y.ID) })
	lost := t0.Add(time.Minute)
	want := sessiontools.Remote{Here: "a", Answers: []json.RawMessage{json.RawMessage(`{"sessions":[{"session_id":"s-b","replica":"b"}]}`)},
		Unlisted: []sessiontools.Unlisted{
			{ID: "ctx-c", Kind: "context", Language: "python", Name: "nb", StartedAt: t0, Replica: "c", Note: "replica c did not answer within 2s"},
			{ID: "s-d", Kind: "session", Language: "python", StartedAt: t0, Replica: "d", LostAt: &lost},
		}}
	noRecord := cmpopts.IgnoreFields(sessiontools.Unlisted{}, "Record")
	if diff := cmp.Diff(want, got, noRecord); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if took < PeerListTimeout || took > PeerListTimeout+time.Second {
		t.Errorf("listing took %v, want just over %v (c never answers)", took, PeerListTimeout)
	}
	if asked.Load() != 1 {
		t.Errorf("b was asked %d times, want once", asked.Load())
	}

	gotRuns, err := pl.Elsewhere(tenant.With(ctx, "alice"), "list_runs", map[string]any{"limit": 5})
	wantRuns := sessiontools.Remote{Here: "a", Unlisted: []sessiontools.Unlisted{
		{ID: "exec_d", Kind: runs.LabelKind, Name: "execute_code", StartedAt: t0, Replica: "d", LostAt: &lost}}}
	if diff := cmp.Diff(wantRuns, gotRuns, noRecord); err != nil || diff != "" {
		t.Errorf("list_runs' records (err %v) (-want +got)\n%s", err, diff)
	}
	if asked.Load() != 1 {
		t.Errorf("list_runs asked b, which holds no run of alice's")
	}

	lists := reg.lists.Load()
	if _, err := a.Forward(ctx, hop, "alice", "tools/call", json.RawMessage(`{"name":"list_sessions"}`), nil); err != nil {
		t.Fatalf("hop: %v", err)
	}
	if diff := cmp.Diff(sessiontools.Remote{Here: "a"}, <-here); diff != "" || reg.lists.Load() != lists {
		t.Errorf("a listing over the hop fanned out (%d registry lists): (-want +got)\n%s", reg.lists.Load()-lists, diff)
	}
}
