package mcpserver

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/pathguard"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
)

var update = flag.Bool("update", false, "rewrite testdata/tools.json")

// TestToolSchemasSnapshot lists every tool over an in-memory transport and
// compares names, annotations and schemas with testdata/tools.json, so a
// schema change shows up in review. Run with -update to accept a change.
func TestToolSchemasSnapshot(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Defaults(dir)
	eng, err := engine.New(engine.Options{SandboxDir: cfg.SandboxDir, DefaultTimeout: time.Second, MaxTimeout: time.Minute,
		KillGrace: time.Second, Output: output.Limits{Max: 10, Head: 4, Tail: 4}}, sandbox.NewSubprocess(),
		runtime.Discover(context.Background(), runtime.Overrides{}, os.Getenv("PATH")), pathguard.New(dir, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := listTools(t, Deps{Config: cfg, Engine: eng})
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

func listTools(t *testing.T, deps Deps) []byte {
	t.Helper()
	s, err := New(deps)
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(res.Tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}
