package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/pgtest"
)

// TestBackgroundRunAcrossReplicas: a background run started on one replica
// is read and cancelled through another (get_run and cancel_run are routed
// by execution id, which the owner claims in the session registry), only
// by its principal; ended, it is still read through the other replica
// (the owner's directory store is its own, so it keeps the claim while it
// lists the run); a killed owner's run answers SESSION_LOST there.
func TestBackgroundRunAcrossReplicas(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	tokens := "CODEXEC_AUTH_TOKENS=" + tokenFile(t)
	a := startHTTP(t, "", replicaEnv(dsn, "r-a", tokens)...)
	b := startHTTP(t, "", replicaEnv(dsn, "r-b", tokens)...)
	aliceA, aliceB, bobB := a.mustConnect(aliceToken), b.mustConnect(aliceToken), b.mustConnect(bobToken)

	id := startBackground(t, aliceA, "execute_code", map[string]any{"language": "bash", "code": "echo one; sleep 60"})
	if v := getRun(t, aliceB, id, 0, 0, 5000); v.Status != "running" || v.Stdout != "one\n" {
		t.Errorf("get_run through the other replica: %+v", v)
	}
	if listed := listSessions(t, aliceB); len(listed) != 0 {
		t.Errorf("list_sessions across replicas lists the run's claim: %v", listed)
	}
	if res := tcall(t, bobB, "get_run", map[string]any{"execution_id": id}); errCode(res) != "EXECUTION_NOT_FOUND" {
		t.Errorf("bob's get_run of alice's run: %s", text(res))
	}
	if got := tout(t, aliceB, "cancel_run", map[string]any{"execution_id": id}); got["status"] != "cancelled" {
		t.Errorf("cancel_run through the other replica: %v", got)
	}
	if v := getRun(t, aliceB, id, 0, 0, 0); v.Status != "cancelled" || v.Stdout != "one\n" || len(v.Result) == 0 {
		t.Errorf("the ended run through the other replica: %+v", v)
	}

	c := startHTTP(t, "", replicaEnv(dsn, "r-c", tokens)...)
	onC := startBackground(t, c.mustConnect(aliceToken), "execute_code", map[string]any{"language": "bash", "code": "sleep 60"})
	_ = c.Cmd.Process.Kill()
	deadline := time.Now().Add(4 * replicaLease)
	for {
		res := tcall(t, aliceB, "get_run", map[string]any{"execution_id": onC})
		if errCode(res) == "SESSION_LOST" && strings.Contains(text(res), "r-c") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a killed replica's run: %s", text(res))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if listed := listSessions(t, aliceB); len(listed) != 0 {
		t.Errorf("list_sessions lists the lost run's claim: %v", listed)
	}
}
