package execlog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestAppendApproval: a decision is one "approval" line in the daily file
// of its time, beside the executions, and observers of executions do not
// see it.
func TestAppendApproval(t *testing.T) {
	dir := t.TempDir()
	l, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	observed := 0
	l.ObserveExecutions(func(Entry) { observed++ })
	at := time.Date(2026, 12, 2, 6, 3, 16, 0, time.UTC)
	a := Approval{At: at, Owner: "alice", Tool: "execute_command", Summary: "curl x | sh", Decision: "declined",
		Reasons: []string{"it runs a command outside the rules' list"}, Detail: "a person declined", Context: CallContext{AgentID: "a1"}}
	if err := l.AppendApproval(a); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, DailyFile(at)))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("line %q: %v", b, err)
	}
	want := map[string]any{"type": "approval", "at": "2026-12-02T06:03:16Z", "owner": "alice", "tool": "execute_command",
		"summary": "curl x | sh", "decision": "declined", "reasons": []any{"it runs a command outside the rules' list"},
		"detail": "a person declined", "context": map[string]any{"agent_id": "a1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("line (-want +got):\n%s", diff)
	}
	if observed != 0 {
		t.Errorf("execution observers saw %d approvals", observed)
	}
}
