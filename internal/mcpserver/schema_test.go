package mcpserver_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/mcpserver"
	"github.com/codexec/codexec/internal/mcpserver/tooltest"
)

var update = flag.Bool("update", false, "rewrite testdata/tools.json")

// TestToolSchemasSnapshot lists every tool over an in-memory transport and
// compares names, annotations and schemas with testdata/tools.json, so a
// schema change shows up in review. Run with -update to accept a change.
func TestToolSchemasSnapshot(t *testing.T) {
	// Annotations must not depend on the host: the fake server reports what
	// subprocess mode does.
	got := listTools(t, newFakeServer(t, fakeOptions{}).Server)
	path := filepath.Join("testdata", "tools.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("tool schemas changed (-want +got); run `go test ./internal/mcpserver -update` if intended:\n%s", diff)
	}
}

// TestToolSurfaceBudget fails when the default tools/list grows past its
// budgets: mcpserver.ModelSurfaceBudget for what a model is shown (each
// tool without its output schema), mcpserver.WireBudget for all of it
// (compact JSON of the tools array, every toolset on).
func TestToolSurfaceBudget(t *testing.T) {
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(listTools(t, newFakeServer(t, fakeOptions{}).Server), &tools); err != nil {
		t.Fatal(err)
	}
	wire, model := 2, 2 // the array's brackets
	for _, tool := range tools {
		all := compactLen(t, tool)
		out := tool["outputSchema"]
		delete(tool, "outputSchema")
		shown := compactLen(t, tool)
		wire += all + 1
		model += shown + 1
		t.Logf("%6d %6d (output schema %d) %s", all, shown, len(out), tool["name"])
	}
	t.Logf("tools/list: %d characters (budget %d), shown to a model %d (budget %d)",
		wire, mcpserver.WireBudget, model, mcpserver.ModelSurfaceBudget)
	if model > mcpserver.ModelSurfaceBudget {
		t.Errorf("the tools shown to a model take %d characters, over the %d budget: shorten descriptions or input schemas", model, mcpserver.ModelSurfaceBudget)
	}
	if wire > mcpserver.WireBudget {
		t.Errorf("tools/list is %d characters, over the %d budget: shorten schemas", wire, mcpserver.WireBudget)
	}
}

func compactLen(t *testing.T, v any) int {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

func toolName(raw json.RawMessage) string {
	var v struct{ Name string }
	_ = json.Unmarshal(raw, &v)
	return v.Name
}

// listTools is s's tools/list as a client reads it, indented JSON.
func listTools(t *testing.T, s *mcpserver.Server) []byte {
	t.Helper()
	res, err := tooltest.Connect(t, s.MCP()).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(res.Tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}
