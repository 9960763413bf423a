package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/pgtest"
	"github.com/codexec/codexec/internal/s3store/s3test"
)

// TestBackgroundRunAcrossReplicas: a background run started on one replica
// is read and cancelled through another (get_run and cancel_run are routed
// by execution id, which the owner claims in the session registry), only
// by its principal; ended, it is still read through the other replica
// (the owner keeps the claim while it lists the run); list_runs on either
// replica lists the caller's runs on both; a killed owner's running run is
// status lost there, in get_run (which replica stopped, and when) and in
// list_runs (replica, lost_at), as a restarted server reports a run it
// never finished.
func TestBackgroundRunAcrossReplicas(t *testing.T) {
	sameInEveryMode(t, "replicas pin subprocess mode")
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

	onB := startBackground(t, aliceB, "execute_code", map[string]any{"language": "bash", "code": "sleep 60"})
	checkRunsListed(t, aliceA, map[string]listedRun{id: {Status: "cancelled", Replica: "r-a"}, onB: {Status: "running", Replica: "r-b"}})
	checkRunsListed(t, bobB, map[string]listedRun{})

	c := startHTTP(t, "", replicaEnv(dsn, "r-c", tokens)...)
	onC := startBackground(t, c.mustConnect(aliceToken), "execute_code", map[string]any{"language": "bash", "code": "sleep 60"})
	_ = c.Cmd.Process.Kill()
	deadline := time.Now().Add(4 * replicaLease)
	for {
		res := tcall(t, aliceB, "get_run", map[string]any{"execution_id": onC})
		var v runView
		decodeStructured(t, res, &v)
		if !res.IsError && v.Status == "lost" {
			if !strings.Contains(v.ErrorMessage, "Replica r-c stopped") || v.Tool != "execute_code" {
				t.Errorf("a killed replica's run: %+v", v)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a killed replica's run: %s", text(res))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := tout(t, aliceA, "cancel_run", map[string]any{"execution_id": onC}); got["status"] != "lost" {
		t.Errorf("cancel_run of the lost run: %v", got)
	}
	checkRunsListed(t, aliceA, map[string]listedRun{id: {Status: "cancelled", Replica: "r-a"}, onB: {Status: "running", Replica: "r-b"},
		onC: {Status: "lost", Replica: "r-c", Lost: true}})
	if got := tout(t, aliceB, "list_runs", map[string]any{"status": "lost"})["runs"].([]any); len(got) != 1 {
		t.Errorf("list_runs status lost: %v", got)
	}
	if listed := listSessions(t, aliceB); len(listed) != 0 {
		t.Errorf("list_sessions lists the lost run's claim: %v", listed)
	}
}

// listedRun is a run as list_runs lists it among replicas.
type listedRun struct {
	Status, Replica string
	Lost            bool // lost_at set
}

// checkRunsListed: list_runs through cs lists exactly want.
func checkRunsListed(t *testing.T, cs *mcp.ClientSession, want map[string]listedRun) {
	t.Helper()
	var out struct {
		Runs []struct {
			ExecutionID string     `json:"execution_id"`
			Status      string     `json:"status"`
			Replica     string     `json:"replica"`
			LostAt      *time.Time `json:"lost_at"`
		} `json:"runs"`
	}
	res := tcall(t, cs, "list_runs", nil)
	decodeStructured(t, res, &out)
	got := map[string]listedRun{}
	for _, r := range out.Runs {
		got[r.ExecutionID] = listedRun{Status: r.Status, Replica: r.Replica, Lost: r.LostAt != nil}
	}
	if diff := cmp.Diff(want, got); res.IsError || diff != "" {
		t.Errorf("list_runs (%s) (-want +got):\n%s", text(res), diff)
	}
}

// TestBackgroundRunInS3Store: with the S3 blob store an ended run's result
// and output are objects of the bucket, and another server on the same
// bucket (a replica, or this one restarted elsewhere) reads the run whole.
func TestBackgroundRunInS3Store(t *testing.T) {
	sameInEveryMode(t, "a store test")
	srv := s3test.Start(t)
	s1 := start(t, s3Env(t, srv)...)
	id := startBackground(t, s1.Session, "execute_code", map[string]any{"language": "python", "code": "print('s3 kept')\nprint('é' * 3)"})
	r := &reader{id: id}
	if v := r.untilEnd(t, s1.Session, time.Minute); v.Status != "success" {
		t.Fatalf("run: %+v", v)
	}
	obj := filepath.Join(srv.Dir, "codexec", "replicas", "items", "run_"+id+".json")
	waitFor(t, 30*time.Second, "the run's item in the bucket", func() bool { _, err := os.Stat(obj); return err == nil })
	s2 := start(t, s3Env(t, srv)...)
	other := &reader{id: id}
	v := other.untilEnd(t, s2.Session, time.Minute)
	var res struct{ Status, Stdout string }
	_ = json.Unmarshal(v.Result, &res)
	if v.Status != "success" || other.stdout.String() != r.stdout.String() || res.Stdout != "s3 kept\nééé\n" {
		t.Errorf("read by another server on the bucket: %+v, output %q", v, other.stdout.String())
	}
}
