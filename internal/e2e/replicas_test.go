package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/pgtest"
	"github.com/codexec/codexec/internal/replicas"
	"github.com/codexec/codexec/internal/sessionreg"
)

const (
	replicaSecret = "e2e-replica-secret-0123456789"
	// replicaLease is short so that a killed replica's sessions are lost
	// within seconds (4/3 of it at most).
	replicaLease = 3 * time.Second
)

// replicaEnv is the environment of replica id on store dsn.
func replicaEnv(dsn, id string, extra ...string) []string {
	return append([]string{"CODEXEC_STORE=" + dsn, "CODEXEC_SANDBOX_MODE=subprocess", "CODEXEC_REPLICA_ID=" + id,
		"CODEXEC_REPLICA_SECRET=" + replicaSecret, "CODEXEC_REPLICA_LEASE=" + replicaLease.String()}, extra...)
}

// tcall calls a tool over cs; a protocol error fails the test.
func tcall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// tout calls a tool that must succeed and returns its structured content.
func tout(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res := tcall(t, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s %v: %s", tool, args, text(res))
	}
	var out map[string]any
	decodeStructured(t, res, &out)
	return out
}

// errCode is the code of a failed call ("" when it succeeded).
func errCode(res *mcp.CallToolResult) string {
	if !res.IsError {
		return ""
	}
	var e struct{ Code string }
	_ = json.Unmarshal([]byte(text(res)), &e)
	return e.Code
}

// TestReplicasForwardAndLose: sessions and contexts started on one replica
// are reached from another (the call is forwarded), by a client of the
// stateless protocol as by one in an MCP session (no stickiness needed;
// progress and cancel reach the owner's run), only by their owner;
// the hop refuses requests without the shared secret; a drained replica's
// sessions and a killed one's (within the lease bound) answer SESSION_LOST,
// and none is silently recreated.
func TestReplicasForwardAndLose(t *testing.T) {
	sameInEveryMode(t, "replicas pin subprocess mode")
	dsn := pgtest.Start(t).NewDatabase(t)
	tokens := "CODEXEC_AUTH_TOKENS=" + tokenFile(t)
	a := startHTTP(t, "", replicaEnv(dsn, "r-a", tokens)...)
	b := startHTTP(t, "", replicaEnv(dsn, "r-b", tokens)...)
	// alice holds an MCP session on a (the revision with sessions) and talks
	// to b statelessly: no MCP session ties her calls on b to any replica.
	aliceA, aliceB, bobB := a.mustConnectAt(aliceToken, legacyVersion), b.mustConnect(aliceToken), b.mustConnect(bobToken)
	if got := aliceB.InitializeResult().ProtocolVersion; got != statelessVersion {
		t.Fatalf("the client on b negotiated %q, want the stateless %q", got, statelessVersion)
	}

	sess := tout(t, aliceA, "start_session", map[string]any{"language": "python"})["session_id"].(string)
	tout(t, aliceA, "send_to_session", map[string]any{"session_id": sess, "code": "x = 41"})
	if got := tout(t, aliceB, "send_to_session", map[string]any{"session_id": sess, "code": "print(x + 1)"})["stdout"]; got != "42\n" {
		t.Errorf("forwarded send_to_session: stdout %q, want 42", got)
	}
	for _, version := range []string{"", legacyVersion} { // stateless, then in a session on b
		checkForwardedProgress(t, b, aliceA, sess, version)
	}
	checkForwardedResource(t, aliceA, aliceB, bobB, sess)
	tout(t, aliceA, "create_context", map[string]any{"name": "shared-ctx"})
	tout(t, aliceA, "run_code", map[string]any{"context_id": "shared-ctx", "code": "y = 'kept'"})
	if got := tout(t, aliceB, "run_code", map[string]any{"context_id": "shared-ctx", "code": "print(y)"})["stdout"]; got != "kept\n" {
		t.Errorf("forwarded run_code by context name: stdout %q", got)
	}
	if res := tcall(t, aliceB, "create_context", map[string]any{"name": "shared-ctx"}); errCode(res) != "INVALID_CONTEXT_NAME" {
		t.Errorf("a second context of that name on another replica: %s", text(res))
	}
	tout(t, aliceA, "execute_code", map[string]any{"language": "python", "code": "z = 7", "session_id": "alice-proj"})
	if r := tout(t, aliceB, "execute_code", map[string]any{"language": "python", "code": "print(z)", "session_id": "alice-proj"}); r["stdout"] != "7\n" {
		t.Errorf("forwarded execute_code with a caller-chosen id: %v", r)
	}
	if res := tcall(t, bobB, "send_to_session", map[string]any{"session_id": sess, "code": "print(x)"}); errCode(res) != "SESSION_NOT_FOUND" {
		t.Errorf("bob reached alice's session: %s", text(res))
	}
	checkHop(t, a, sess)
	checkListing(t, aliceA, aliceB, bobB, sess)

	// A drained replica: its sessions are lost, not recreated elsewhere.
	sessB := tout(t, aliceB, "start_session", map[string]any{"language": "python"})["session_id"].(string)
	checkHopListsOwnOnly(t, a, sessB)
	if err := b.terminate(30 * time.Second); err != nil {
		t.Fatalf("b did not exit cleanly: %v", err)
	}
	res := tcall(t, aliceA, "send_to_session", map[string]any{"session_id": sessB, "code": "print(1)"})
	if errCode(res) != "SESSION_LOST" || !strings.Contains(text(res), "session lost (replica r-b stopped at ") {
		t.Errorf("a drained replica's session: %s", text(res))
	}
	if s := listSessions(t, aliceA)[sessB]; s.Status != "lost" || s.Replica != "r-b" || s.LostAt == nil || s.Language != "python" {
		t.Errorf("a drained replica's session is listed as %+v", s)
	}
	checkReadLost(t, aliceA, sessB)

	// A killed replica: found by the lease sweep within 4/3 of the lease.
	c := startHTTP(t, "", replicaEnv(dsn, "r-c", tokens)...)
	aliceC := c.mustConnect(aliceToken)
	tout(t, aliceC, "execute_code", map[string]any{"language": "python", "code": "w = 1", "session_id": "on-c"})
	killed := time.Now()
	_ = c.Cmd.Process.Kill()
	awaitListedLost(t, aliceA, "on-c", "r-c", killed, replicaLease*4/3+2*time.Second)
	var lostAfter time.Duration
	for time.Since(killed) < 4*replicaLease {
		res := tcall(t, aliceA, "execute_code", map[string]any{"language": "python", "code": "print(w)", "session_id": "on-c"})
		if errCode(res) == "SESSION_LOST" {
			lostAfter = time.Since(killed)
			break
		}
		if !res.IsError {
			t.Fatalf("a killed replica's session answered (recreated?): %s", text(res))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("killed replica's session answered SESSION_LOST %v after the kill (bound 4/3 × %v = %v)", lostAfter, replicaLease, replicaLease*4/3)
	if lostAfter == 0 || lostAfter > replicaLease*4/3+2*time.Second {
		t.Errorf("lost after %v, want within %v", lostAfter, replicaLease*4/3)
	}
	if got := tout(t, aliceA, "send_to_session", map[string]any{"session_id": sess, "code": "print(x)"})["stdout"]; got != "41\n" {
		t.Errorf("the survivor's own session after the kill: %q", got)
	}
}

// checkHop: a's hop refuses requests without the shared secret, and a
// signed request naming another principal cannot use alice's session: the
// owner applies the principal's own lookup.
func checkHop(t *testing.T, a *httpServer, sess string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_to_session","arguments":{"session_id":"` + sess + `","code":"print(x)"}}}`
	if code, _, _ := do(t, "POST", a.URL+replicas.HopPath, body, mcpHeaders(nil)); code != http.StatusForbidden {
		t.Errorf("unsigned hop request: HTTP %d, want 403", code)
	}
	owner := sessionreg.Replica{ID: "r-a", Addr: a.URL}
	params := json.RawMessage(`{"name":"send_to_session","arguments":{"session_id":"` + sess + `","code":"print(x)"}}`)
	wrong := replicas.New(replicas.Options{Secret: "not-the-shared-secret-000", Lease: time.Second})
	if _, err := wrong.Forward(context.Background(), owner, "alice", "tools/call", params, nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("hop with a wrong secret: %v, want 403", err)
	}
	right := replicas.New(replicas.Options{Secret: replicaSecret, Lease: time.Second})
	misaddressed := sessionreg.Replica{ID: "r-b", Addr: a.URL}
	if _, err := right.Forward(context.Background(), misaddressed, "alice", "tools/call", params, nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("hop addressed to r-b sent to r-a: %v, want 403", err)
	}
	raw, err := right.Forward(context.Background(), owner, "bob", "tools/call", params, nil)
	var res mcp.CallToolResult
	if err == nil {
		err = json.Unmarshal(raw, &res)
	}
	if err != nil || errCode(&res) != "SESSION_NOT_FOUND" {
		t.Errorf("signed hop as bob for alice's session: %v %s", err, text(&res))
	}
	raw, err = right.Forward(context.Background(), owner, "alice", "tools/call", params, nil)
	if err == nil {
		err = json.Unmarshal(raw, &res)
	}
	if err != nil || res.IsError {
		t.Errorf("signed hop as alice: %v %s", err, text(&res))
	}
}
