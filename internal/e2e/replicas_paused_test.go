package e2e

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/pgtest"
	"github.com/codexec/codexec/internal/s3store/s3test"
)

// TestReplicasPausedSessions: replicas sharing PostgreSQL and an S3
// bucket share paused sessions. A session paused on one replica is listed
// once, as paused, and resumes through another with its state; two
// replicas resuming one paused session at once make one live copy (the
// loser forwards); a context resumes by its name; a drained replica's live sessions resume on the others
// with their state, and one whose state cannot be checkpointed is lost,
// with the reason; a killed replica's session is lost even with an
// automatic checkpoint.
func TestReplicasPausedSessions(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	s3 := s3test.Start(t)
	tokens := "CODEXEC_AUTH_TOKENS=" + tokenFile(t)
	env := func(id string, extra ...string) []string {
		return replicaEnv(dsn, id, append(append(s3Env(t, s3), tokens, "CODEXEC_CHECKPOINT_AUTO=0"), extra...)...)
	}
	a := startHTTP(t, "", env("r-a")...)
	b := startHTTP(t, "", env("r-b", "CODEXEC_CHECKPOINT_MAX_BYTES=1m")...)
	aliceA, aliceB, bobB := a.mustConnect(aliceToken), b.mustConnect(aliceToken), b.mustConnect(bobToken)

	sess := tout(t, aliceA, "start_session", map[string]any{"language": "python"})["session_id"].(string)
	tout(t, aliceA, "send_to_session", map[string]any{"session_id": sess, "code": "x = 41; n = 0"})
	if p := tout(t, aliceA, "pause_session", map[string]any{"session_id": sess}); p["status"] != "paused" {
		t.Fatalf("pause_session: %v", p)
	}
	for name, cs := range map[string]*mcp.ClientSession{"r-a": aliceA, "r-b": aliceB} {
		if l := listSessions(t, cs)[sess]; l.Status != "paused" || l.Replica != "" || l.LostAt != nil || l.Language != "python" {
			t.Errorf("the paused session as %s lists it: %+v", name, l)
		}
	}
	if res := tcall(t, bobB, "send_to_session", map[string]any{"session_id": sess, "code": "print(x)"}); errCode(res) != "SESSION_NOT_FOUND" {
		t.Errorf("bob reached alice's paused session: %s", text(res))
	}
	out := tout(t, aliceB, "send_to_session", map[string]any{"session_id": sess, "code": "print(x + 1)"})
	if out["stdout"] != "42\n" || out["resumed"] == nil {
		t.Errorf("resumed through r-b: %v", out)
	}
	if l := listSessions(t, aliceA)[sess]; l.Replica != "r-b" || l.Status == "paused" || l.Status == "lost" {
		t.Errorf("after the resume r-a lists it as %+v, want live on r-b", l)
	}

	// A context, by its name: paused on r-a, resumed through r-b.
	tout(t, aliceA, "create_context", map[string]any{"name": "nb"})
	tout(t, aliceA, "run_code", map[string]any{"context_id": "nb", "code": "v = 'ctx kept'"})
	tout(t, aliceA, "pause_session", map[string]any{"session_id": "nb"})
	if got := tout(t, aliceB, "run_code", map[string]any{"context_id": "nb", "code": "print(v)"})["stdout"]; got != "ctx kept\n" {
		t.Errorf("a paused context resumed by name through r-b: %q", got)
	}

	checkPausedClose(t, aliceA, aliceB)
	checkOneCopy(t, sess, aliceA, aliceB)
	checkDrainCarries(t, b, aliceA, aliceB, sess)
	if got := tout(t, aliceA, "run_code", map[string]any{"context_id": "nb", "code": "print(v)"})["stdout"]; got != "ctx kept\n" {
		t.Errorf("the context r-b held, after its drain, on r-a: %q", got)
	}

	// A killed replica's session stays lost, automatic checkpoint or not.
	c := startHTTP(t, "", env("r-c", "CODEXEC_CHECKPOINT_AUTO=200ms")...)
	aliceC := c.mustConnect(aliceToken)
	tout(t, aliceC, "execute_code", map[string]any{"language": "python", "code": "w = 1", "session_id": "on-c"})
	time.Sleep(time.Second) // the automatic checkpoint
	killed := time.Now()
	_ = c.Cmd.Process.Kill()
	awaitListedLost(t, aliceA, "on-c", "r-c", killed, replicaLease*4/3+2*time.Second)
	if res := tcall(t, aliceA, "send_to_session", map[string]any{"session_id": "on-c", "code": "print(w)"}); errCode(res) != "SESSION_LOST" {
		t.Errorf("a killed replica's session with an automatic checkpoint: %s", text(res))
	}
}

// checkOneCopy pauses sess (wherever it is) and sends one call for it
// through each replica at once: both reach one interpreter, which counts
// both calls.
func checkOneCopy(t *testing.T, sess string, cs ...*mcp.ClientSession) {
	t.Helper()
	for round := range 3 {
		tout(t, cs[0], "pause_session", map[string]any{"session_id": sess})
		outs := make([]string, len(cs))
		var wg sync.WaitGroup
		for i, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := tcall(t, c, "send_to_session", map[string]any{"session_id": sess, "code": "import os\nn += 1\nprint(n, os.getpid())"})
				if res.IsError {
					t.Errorf("round %d, client %d: %s", round, i, text(res))
					return
				}
				var o struct{ Stdout string }
				decodeStructured(t, res, &o)
				outs[i] = strings.TrimSpace(o.Stdout)
			}()
		}
		wg.Wait()
		sort.Strings(outs)
		var n1, n2, pid1, pid2 int
		fmt.Sscan(outs[0], &n1, &pid1)
		fmt.Sscan(outs[1], &n2, &pid2)
		if pid1 != pid2 || n2 != n1+1 || pid1 == 0 {
			t.Errorf("round %d: two resumes at once answered %q, want one interpreter counting both calls", round, outs)
		}
	}
}

// checkDrainCarries drains b while it holds live sessions: the others
// resume them with their state; one too big to checkpoint there is lost.
func checkDrainCarries(t *testing.T, b *httpServer, aliceA, aliceB *mcp.ClientSession, sess string) {
	t.Helper()
	onB := tout(t, aliceB, "start_session", map[string]any{"language": "python"})["session_id"].(string)
	tout(t, aliceB, "send_to_session", map[string]any{"session_id": onB, "code": "y = 'carried'"})
	big := tout(t, aliceB, "start_session", map[string]any{"language": "python"})["session_id"].(string)
	tout(t, aliceB, "send_to_session", map[string]any{"session_id": big, "code": "import os\nblob = os.urandom(3_000_000)"})
	before := listSessions(t, aliceA)[sess].Replica
	if err := b.terminate(30 * time.Second); err != nil {
		t.Fatalf("r-b did not exit cleanly: %v", err)
	}
	l := listSessions(t, aliceA)
	if l[onB].Status != "paused" || l[big].Status != "lost" {
		t.Errorf("after r-b drained: %+v and %+v, want paused and lost", l[onB], l[big])
	}
	out := tout(t, aliceA, "send_to_session", map[string]any{"session_id": onB, "code": "print(y)"})
	if out["stdout"] != "carried\n" || out["resumed"] == nil {
		t.Errorf("a drained replica's session on r-a: %v", out)
	}
	res := tcall(t, aliceA, "send_to_session", map[string]any{"session_id": big, "code": "print(1)"})
	if errCode(res) != "SESSION_LOST" || !strings.Contains(text(res), "session lost (replica r-b stopped at ") {
		t.Errorf("a session r-b could not checkpoint: %s", text(res))
	}
	if before == "r-b" {
		if got := tout(t, aliceA, "send_to_session", map[string]any{"session_id": sess, "code": "print(n)"})["stdout"]; got != "6\n" {
			t.Errorf("the counter carried from r-b: %q, want 6", got)
		}
	}
	if l := listSessions(t, aliceA)[onB]; l.Replica != "r-a" || l.Status == "lost" || l.Status == "paused" {
		t.Errorf("after the resume r-a lists %s as %+v", onB, l)
	}
}

// checkPausedClose: a paused session is paused again and closed through
// another replica without being resumed; then it is gone everywhere.
func checkPausedClose(t *testing.T, aliceA, aliceB *mcp.ClientSession) {
	t.Helper()
	gone := tout(t, aliceA, "start_session", map[string]any{"language": "python"})["session_id"].(string)
	tout(t, aliceA, "send_to_session", map[string]any{"session_id": gone, "code": "q = 1"})
	tout(t, aliceA, "pause_session", map[string]any{"session_id": gone})
	before := listSessions(t, aliceA)[gone]
	if p := tout(t, aliceB, "pause_session", map[string]any{"session_id": gone}); p["status"] != "paused" {
		t.Errorf("pausing a paused session through r-b: %v", p)
	}
	// A resume would have claimed it anew (the registry's claim time).
	if l := listSessions(t, aliceA)[gone]; l.Status != "paused" || l.Replica != "" || !l.StartedAt.Equal(before.StartedAt) {
		t.Errorf("pause_session through r-b resumed it: %+v, was %+v", l, before)
	}
	tout(t, aliceB, "close_session", map[string]any{"session_id": gone})
	if res := tcall(t, aliceA, "send_to_session", map[string]any{"session_id": gone, "code": "print(q)"}); errCode(res) != "SESSION_NOT_FOUND" {
		t.Errorf("a closed paused session: %s", text(res))
	}
	if l, ok := listSessions(t, aliceB)[gone]; ok {
		t.Errorf("a closed paused session is listed: %+v", l)
	}
}
