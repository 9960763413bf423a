package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/replicas"
	"github.com/codexec/codexec/internal/sessionreg"
)

// replicaListed is one entry of list_sessions, as the replica tests read it.
type replicaListed struct {
	SessionID string     `json:"session_id"`
	Kind      string     `json:"kind"`
	Status    string     `json:"status"`
	Language  string     `json:"language"`
	Name      string     `json:"name"`
	Replica   string     `json:"replica"`
	LostAt    *time.Time `json:"lost_at"`
	Note      string     `json:"note"`
	StartedAt time.Time  `json:"started_at"`
}

// listSessions is list_sessions over cs, by session id, failing the test
// on an error or a repeated id.
func listSessions(t *testing.T, cs *mcp.ClientSession) map[string]replicaListed {
	t.Helper()
	var out struct{ Sessions []replicaListed }
	res := tcall(t, cs, "list_sessions", map[string]any{})
	if res.IsError {
		t.Fatalf("list_sessions: %s", text(res))
	}
	decodeStructured(t, res, &out)
	byID := map[string]replicaListed{}
	for _, s := range out.Sessions {
		if _, dup := byID[s.SessionID]; dup {
			t.Errorf("list_sessions lists %s twice", s.SessionID)
		}
		byID[s.SessionID] = s
	}
	return byID
}

// checkListing: alice's sessions and contexts held by replica r-a are
// listed by r-b too, with the same fields and their replica; bob's
// listing on r-b shows none of them.
func checkListing(t *testing.T, aliceA, aliceB, bobB *mcp.ClientSession, sess string) {
	t.Helper()
	atA, atB := listSessions(t, aliceA), listSessions(t, aliceB)
	if got := atB[sess]; got.Replica != "r-a" || got.Status != "active" || got.Language != "python" || got.Kind != "session" {
		t.Errorf("r-b lists alice's session held by r-a as %+v", got)
	}
	for id, s := range atA {
		if b := atB[id]; b != s {
			t.Errorf("session %s: r-a lists %+v, r-b %+v", id, s, b)
		}
	}
	if len(atA) != len(atB) {
		t.Errorf("r-a lists %d sessions, r-b %d", len(atA), len(atB))
	}
	var ctxs struct {
		Contexts []struct {
			ContextID, Name, Language, Status, Replica string
		}
		Total int
	}
	decodeStructured(t, tcall(t, aliceB, "list_contexts", map[string]any{}), &ctxs)
	found := false
	for _, c := range ctxs.Contexts {
		found = found || (c.Name == "shared-ctx" && c.Replica == "r-a" && c.Status == "active" && c.Language == "python")
	}
	if !found || ctxs.Total != len(ctxs.Contexts) || ctxs.Total != len(atB) {
		t.Errorf("r-b's list_contexts: %+v (want shared-ctx on r-a among %d)", ctxs, len(atB))
	}
	if got := listSessions(t, bobB); len(got) != 0 {
		t.Errorf("bob lists %v", got)
	}
}

// checkHopListsOwnOnly: a listing that came over the hop answers for its
// replica only (it never fans out again), though the caller has sessions
// on another replica.
func checkHopListsOwnOnly(t *testing.T, a *httpServer, elsewhere string) {
	t.Helper()
	hop := replicas.New(replicas.Options{Secret: replicaSecret, Lease: time.Second})
	raw, err := hop.Forward(context.Background(), sessionreg.Replica{ID: "r-a", Addr: a.URL}, "alice", "tools/call",
		json.RawMessage(`{"name":"list_sessions","arguments":{}}`), nil)
	var res mcp.CallToolResult
	if err == nil {
		err = json.Unmarshal(raw, &res)
	}
	if err != nil || res.IsError {
		t.Fatalf("list_sessions over the hop: %v %s", err, text(&res))
	}
	var out struct{ Sessions []replicaListed }
	decodeStructured(t, &res, &out)
	for _, s := range out.Sessions {
		if s.Replica != "r-a" || s.SessionID == elsewhere {
			t.Errorf("r-a's listing over the hop shows %+v: it fanned out", s)
		}
	}
	if len(out.Sessions) == 0 {
		t.Error("r-a's listing over the hop is empty")
	}
}

// checkForwardedProgress: a call forwarded by b to the session's owner
// streams the run's output as progress notifications to the caller under
// its own token, and cancelling the call stops the run on the owner.
func checkForwardedProgress(t *testing.T, b *httpServer, atOwner *mcp.ClientSession, sess, version string) {
	t.Helper()
	pl := newProgressLog()
	client := mcp.NewClient(&mcp.Implementation{Name: "codexec-e2e-replicas", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: pl.handle})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.URL + "/mcp", HTTPClient: httpClient(aliceToken), MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callStreamed(t, ctx, cs, pl, "send_to_session", map[string]any{"session_id": sess, "code": pyTicksCode}, "fwd-ticks")

	callCtx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "send_to_session", Arguments: map[string]any{"session_id": sess, "timeout_ms": 120000,
			"code": "import time\nfor j in range(1200):\n    print(f'spin {j}', flush=True)\n    time.sleep(0.05)\n"}}
		p.SetProgressToken("fwd-spin")
		_, err := cs.CallTool(callCtx, p)
		errc <- err
	}()
	pl.awaitFirst(t, "fwd-spin")
	stop()
	cancelled := time.Now()
	if err := <-errc; err == nil {
		t.Error("the cancelled forwarded call returned a result")
	}
	// On the owner the loop stopped: the session answers at once (calls to
	// one session wait for each other), and j no longer grows.
	first := tout(t, atOwner, "send_to_session", map[string]any{"session_id": sess, "code": "print(j)"})["stdout"]
	answered := time.Since(cancelled)
	time.Sleep(500 * time.Millisecond)
	second := tout(t, atOwner, "send_to_session", map[string]any{"session_id": sess, "code": "print(j)"})["stdout"]
	t.Logf("cancelled forwarded run: the owner's session answered %v after the cancel, at j = %v", answered.Round(time.Millisecond), first)
	if first != second || first == "1199\n" || answered > 10*time.Second {
		t.Errorf("after the cancel the owner's run went on: j %v then %v, session answered after %v", first, second, answered)
	}
}

// checkForwardedResource: a session file read as a resource through
// another replica comes from the owner; bob cannot read it there either.
func checkForwardedResource(t *testing.T, aliceA, aliceB, bobB *mcp.ClientSession, sess string) {
	t.Helper()
	tout(t, aliceA, "send_to_session", map[string]any{"session_id": sess, "code": "open('note.txt', 'w').write('written on r-a')"})
	uri := "codexec://sessions/" + sess + "/files/note.txt"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rr, err := aliceB.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "written on r-a" || rr.Contents[0].URI != uri {
		t.Errorf("resources/read through r-b: %v %+v", err, rr)
	}
	if _, err := aliceB.ReadResource(ctx, &mcp.ReadResourceParams{URI: "codexec://sessions/" + sess + "/files/absent.txt"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a missing file of a forwarded session: %v", err)
	}
	if rr, err := bobB.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
		t.Errorf("bob read alice's session file through r-b: %+v", rr)
	}
}

// checkReadLost: resources/read of a lost session's file says it is lost.
func checkReadLost(t *testing.T, cs *mcp.ClientSession, sess string) {
	t.Helper()
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "codexec://sessions/" + sess + "/files/x.txt"})
	if err == nil || !strings.Contains(err.Error(), "session lost (replica ") {
		t.Errorf("resources/read of a lost session's file: %v", err)
	}
}

// awaitListedLost lists alice's sessions on cs until sess shows as lost,
// held by replica, within bound; it must be listed every time (first as
// unreachable while the sweep has not found the replica dead).
func awaitListedLost(t *testing.T, cs *mcp.ClientSession, sess, replica string, since time.Time, bound time.Duration) {
	t.Helper()
	seen := map[string]int{}
	for {
		s, ok := listSessions(t, cs)[sess]
		switch {
		case !ok:
			t.Fatalf("session %s of the killed replica is missing from the listing", sess)
		case s.Replica != replica:
			t.Fatalf("session %s listed on replica %q, want %q", sess, s.Replica, replica)
		case s.Status == "unreachable" && !strings.Contains(s.Note, "replica "+replica+" did not answer"):
			t.Errorf("unreachable session without a note naming its replica: %+v", s)
		}
		seen[s.Status]++
		if s.Status == "lost" {
			if s.LostAt == nil || s.LostAt.Before(since.Add(-time.Second)) {
				t.Errorf("lost session %+v: lost_at before the kill", s)
			}
			t.Logf("killed replica's session listed lost %v after the kill (statuses seen: %v)", time.Since(since).Round(time.Millisecond), seen)
			return
		}
		if time.Since(since) > bound {
			t.Fatalf("session %s not listed lost within %v: %+v (statuses seen: %v)", sess, bound, s, seen)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
