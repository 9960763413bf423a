package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/codexec/codexec/internal/pgtest"
	"github.com/google/go-cmp/cmp"
)

// TestSharedStorePostgres: two servers (separate data directories, as two
// replicas on two machines) on one PostgreSQL store see each other's
// scripts and execution history: a script saved on one runs on the other,
// and each finds and reads the other's executions.
func TestSharedStorePostgres(t *testing.T) {
	sameInEveryMode(t, "a store test; pins subprocess mode")
	dsn := pgtest.Start(t).NewDatabase(t)
	env := []string{"CODEXEC_STORE=" + dsn, "CODEXEC_SANDBOX_MODE=subprocess"}
	a, b := start(t, env...), start(t, env...)
	code := "import sys\nprint('shared_marker_25', *sys.argv[1:])\n"
	var sv saveOut
	if res := a.callInto("save_script", map[string]any{"name": "shared-hello", "language": "python", "code": code,
		"description": "prints a marker", "tags": []string{"shared"}}, &sv); res.IsError || sv.Version != 1 {
		t.Fatalf("save on a: %+v %s", sv, text(res))
	}
	var run execResult
	if res := b.callInto("run_script", map[string]any{"name": "shared-hello", "args": []string{"from-b"}}, &run); res.IsError || run.Status != "success" {
		t.Fatalf("run on b: %+v %s", run, text(res))
	}
	if want := "shared_marker_25 from-b\n"; run.Stdout != want {
		t.Errorf("run on b: stdout %q, want %q", run.Stdout, want)
	}
	var got scriptOut
	a.callInto("get_script", map[string]any{"name": "shared-hello"}, &got)
	if got.RunCount != 1 || got.LastRunSuccess == nil || !*got.LastRunSuccess {
		t.Errorf("a does not see b's run of the script: %+v", got)
	}
	var found searchOut
	b.callInto("search_scripts", map[string]any{"query": "marker"}, &found)
	if diff := cmp.Diff([]string{"shared-hello"}, names(found.Results)); diff != "" {
		t.Errorf("search_scripts on b (-want +got)\n%s", diff)
	}
	ex, res := a.exec(map[string]any{"language": "python", "code": "print('from_a_only')"})
	if res.IsError || ex.Status != "success" {
		t.Fatalf("execute on a: %s", text(res))
	}
	checkFound(t, a, "shared_marker_25", run.ExecutionID, "run_script", "shared_marker_25 from-b\n")
	checkFound(t, b, "from_a_only", ex.ExecutionID, "execute_code", "from_a_only\n")
	if !strings.Contains(a.Stderr.String(), "shared store: PostgreSQL") {
		t.Errorf("server log does not say which store it uses")
	}
	if strings.Contains(a.Stderr.String(), "entry not recorded") {
		t.Errorf("an entry did not reach the shared history:\n%s", a.Stderr.String())
	}
}

// checkFound searches s's history for word and expects exactly the
// execution id, then reads it whole.
func checkFound(t *testing.T, s *server, word, id, tool, stdout string) {
	t.Helper()
	var out logSearchOut
	if res := s.callInto("search_execution_logs", map[string]any{"query": word}, &out); res.IsError {
		t.Fatalf("search %q: %s", word, text(res))
	}
	if diff := cmp.Diff([]string{id}, hitIDs(out.Results)); diff != "" || out.TotalCount != 1 {
		t.Errorf("search %q: total %d (-want +got)\n%s", word, out.TotalCount, diff)
	}
	var lg logOut
	if res := s.callInto("get_execution_log", map[string]any{"execution_id": id}, &lg); res.IsError {
		t.Fatalf("get %s: %s", id, text(res))
	}
	if lg.Tool != tool || lg.Stdout != stdout || lg.Status != "success" {
		t.Errorf("get %s: tool %q stdout %q status %q, want %q %q success", id, lg.Tool, lg.Stdout, lg.Status, tool, stdout)
	}
}

// TestSharedStoreUnreachable: a store that cannot be reached stops the
// start with an error naming the setting and the reason, not the password.
func TestSharedStoreUnreachable(t *testing.T) {
	sameInEveryMode(t, "start-up refused; pins subprocess mode")
	cmd := exec.Command(binary(t), "serve", "--data-dir", t.TempDir(), "--sandbox-mode", "subprocess")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"CODEXEC_STORE=postgres://codexec:s3cret@127.0.0.1:1/codexec?connect_timeout=5"}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("server started with an unreachable store:\n%s", out)
	}
	if !strings.Contains(string(out), "CODEXEC_STORE: store: cannot reach PostgreSQL at 127.0.0.1:1") {
		t.Errorf("start-up error does not say which setting failed and why:\n%s", tail(string(out), 2000))
	}
	if strings.Contains(string(out), "s3cret") {
		t.Errorf("start-up output shows the store's password:\n%s", out)
	}
}
