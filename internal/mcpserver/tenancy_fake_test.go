package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/codexec/codexec/internal/mcpserver/tooltest"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxfake"
)

// reporting is echoes, and a program that names report.txt also leaves
// that file in its workspace (a kept artifact).
func reporting(spec sandbox.Spec) sandboxfake.Outcome {
	o := echoes(spec)
	if p := tooltest.Program(spec); strings.Contains(p, "report.txt") {
		o.Files = map[string]string{"report.txt": "alice's numbers"}
	}
	return o
}

// TestStoresAreIsolatedInMemory: what alice keeps in the stores (a saved
// script, a logged run and its kept file, a staged upload) bob and the
// local principal can neither read, run, list nor search, and each refusal
// is word for word the one for an id that never existed. The in-memory
// server runs nothing, so this holds on any host; TestPrincipalsAreIsolated
// adds sessions and contexts where real interpreters exist.
func TestStoresAreIsolatedInMemory(t *testing.T) {
	ts, _ := fakeTenants(t, fakeOptions{script: reporting})
	alice, bob, local := ts.client("alice"), ts.client("bob"), ts.client("")
	local.name = "local"
	alice.ok("save_script", map[string]any{"name": "alice-tool", "language": "bash", "code": "echo alicescript"})
	execID := alice.ok("execute_code", map[string]any{"language": "bash", "code": "echo alicesecret; echo n > report.txt"})["execution_id"].(string)
	uplID := alice.ok("upload_file", map[string]any{"path": "in.csv", "content": "a,b"})["upload_id"].(string)
	ghostExec := "exec_" + strings.Repeat("0", len(execID)-len("exec_"))

	for _, other := range []*caller{bob, local} {
		t.Run(other.name, func(t *testing.T) {
			other.t = t
			other.sameAsUnknown("get_script", "name", "alice-tool", "ghost-tool", nil)
			other.sameAsUnknown("run_script", "name", "alice-tool", "ghost-tool", nil)
			other.sameAsUnknown("get_execution_log", "execution_id", execID, ghostExec, nil)
			other.sameAsUnknown("list_files", "execution_id", execID, ghostExec, nil)
			other.sameAsUnknown("download_file", "execution_id", execID, ghostExec, map[string]any{"path": "report.txt"})
			ghostUpl := "upl_" + strings.Repeat("0", len(uplID)-len("upl_"))
			run := func(id string) string {
				return other.refused("execute_code", map[string]any{"language": "bash", "code": "cat in.csv", "files": []string{id}})
			}
			if got, want := run(uplID), strings.ReplaceAll(run(ghostUpl), ghostUpl, uplID); got != want {
				t.Errorf("execute_code with another's upload differs from an unknown one:\n got %s\nwant %s", got, want)
			}
			for tool, args := range map[string]map[string]any{
				"list_scripts": {}, "search_scripts": {"query": "alice"}, "search_execution_logs": {"query": "alicesecret"},
			} {
				key := map[string]string{"list_scripts": "scripts"}[tool]
				if key == "" {
					key = "results"
				}
				if got := other.ok(tool, args)[key].([]any); len(got) != 0 {
					t.Errorf("%s %v shows alice's: %v", tool, args, got)
				}
			}
			if got := other.ok("list_files", map[string]any{})["entries"].([]any); len(got) != 0 {
				t.Errorf("list_files shows alice's uploads or artifacts: %v", got)
			}
		})
	}

	// Alice still has all of it.
	if got := alice.ok("download_file", map[string]any{"execution_id": execID, "path": "report.txt"})["size"]; got != float64(len("alice's numbers")) {
		t.Errorf("alice's kept file has size %v", got)
	}
	if hits := alice.ok("search_execution_logs", map[string]any{"query": "alicesecret"})["results"].([]any); len(hits) != 1 {
		t.Errorf("alice finds %d of her executions, want 1", len(hits))
	}
	if got := alice.ok("run_script", map[string]any{"name": "alice-tool"})["stdout"]; got != "alicescript\n" {
		t.Errorf("alice's script printed %q", got)
	}
}
