package sessiontools

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// peersAt answers Elsewhere with a fixed Remote, and records the tool asked.
type peersAt struct {
	rem   Remote
	asked []string
}

func (p *peersAt) Elsewhere(_ context.Context, tool string, _ map[string]any) (Remote, error) {
	p.asked = append(p.asked, tool)
	return p.rem, nil
}

var (
	t0     = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	lostAt = t0.Add(time.Hour)
)

// remote is what replicas b (answered) and c (did not) hold, and d's
// lost context, as Elsewhere reports them to replica a.
func remote(t *testing.T) Remote {
	t.Helper()
	sessions, err := json.Marshal(ListSessionsOut{Sessions: []SessionInfo{
		{SessionID: "s-b1", Kind: "session", Status: "active", Language: "python", StartedAt: t0.Add(2 * time.Minute), PackagesInstalled: []string{}, Replica: "b"},
		{SessionID: "s-a1", Kind: "session", Status: "active", Language: "python", StartedAt: t0, PackagesInstalled: []string{}, Replica: "b"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	contexts, err := json.Marshal(ListContextsOut{Contexts: []ContextOut{
		{ContextID: "ctx-b", Name: "nb", Language: "javascript", CreatedAt: t0.Add(2 * time.Minute), Status: "active", Replica: "b"},
	}, Total: 1})
	if err != nil {
		t.Fatal(err)
	}
	return Remote{Here: "a", Answers: []json.RawMessage{sessions, contexts}, Unlisted: []Unlisted{
		{ID: "s-c1", Kind: "session", Language: "python", StartedAt: t0.Add(2 * time.Minute), Replica: "c", Note: "replica c did not answer within 2s"},
		{ID: "ctx-d", Kind: "context", Language: "node", Name: "old", StartedAt: t0.Add(-time.Hour), Replica: "d", LostAt: &lostAt},
		{ID: "s-p", Kind: "session", Language: "python", StartedAt: t0.Add(-time.Minute), Paused: true},
	}}
}

// TestRemoteSessions: the local entries get this replica's id, the other
// replicas' entries are added once (a local id wins), registry-only ones
// are lost or unreachable with what the registry knows, and the whole list
// is newest first, then by id.
func TestRemoteSessions(t *testing.T) {
	rem := remote(t)
	rem.Answers = rem.Answers[:1]
	p := &peersAt{rem: rem}
	s := &toolset{deps: Deps{Peers: p}}
	local := []SessionInfo{{SessionID: "s-a1", Kind: "session", Status: "active", Language: "python", StartedAt: t0, PackagesInstalled: []string{}, Pid: 7}}
	got, err := s.remoteSessions(context.Background(), local)
	if err != nil {
		t.Fatal(err)
	}
	want := []SessionInfo{
		{SessionID: "s-b1", Kind: "session", Status: "active", Language: "python", StartedAt: t0.Add(2 * time.Minute), PackagesInstalled: []string{}, Replica: "b"},
		{SessionID: "s-c1", Kind: "session", Status: StatusUnreachable, Language: "python", StartedAt: t0.Add(2 * time.Minute), PackagesInstalled: []string{}, Replica: "c", Note: "replica c did not answer within 2s"},
		{SessionID: "s-a1", Kind: "session", Status: "active", Language: "python", StartedAt: t0, PackagesInstalled: []string{}, Pid: 7, Replica: "a"},
		{SessionID: "s-p", Kind: "session", Status: "paused", Language: "python", StartedAt: t0.Add(-time.Minute), PackagesInstalled: []string{}},
		{SessionID: "ctx-d", Kind: "context", Status: StatusLost, Language: "node", Name: "old", StartedAt: t0.Add(-time.Hour), PackagesInstalled: []string{}, Replica: "d", LostAt: &lostAt},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"list_sessions"}, p.asked); diff != "" {
		t.Errorf("tools asked (-want +got)\n%s", diff)
	}
}

// TestRemoteContexts: the same merge in list_contexts' shape: javascript
// for node, the note in message.
func TestRemoteContexts(t *testing.T) {
	rem := remote(t)
	rem.Answers = rem.Answers[1:]
	p := &peersAt{rem: rem}
	s := &toolset{deps: Deps{Peers: p}}
	got, err := s.remoteContexts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []ContextOut{
		{ContextID: "ctx-b", Name: "nb", Language: "javascript", CreatedAt: t0.Add(2 * time.Minute), Status: "active", Replica: "b"},
		{ContextID: "s-c1", Language: "python", CreatedAt: t0.Add(2 * time.Minute), Status: StatusUnreachable, Message: "replica c did not answer within 2s", Replica: "c"},
		{ContextID: "s-p", Language: "python", CreatedAt: t0.Add(-time.Minute), Status: "paused"},
		{ContextID: "ctx-d", Name: "old", Language: "javascript", CreatedAt: t0.Add(-time.Hour), Status: StatusLost, Replica: "d", LostAt: &lostAt},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"list_contexts"}, p.asked); diff != "" {
		t.Errorf("tools asked (-want +got)\n%s", diff)
	}
}
