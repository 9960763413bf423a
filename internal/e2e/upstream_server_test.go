package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain lets the test binary double as a small upstream MCP server
// ("flaky") for code-mode tests of what the npm servers cannot do on
// demand: crash in the middle of a call, and change their tool list.
func TestMain(m *testing.M) {
	if os.Getenv("CODEXEC_E2E_UPSTREAM") == "flaky" {
		os.Exit(runFlaky())
	}
	code := m.Run()
	if err := removeRootlessState(); err != nil {
		fmt.Fprintln(os.Stderr, "cleaning up after the rootless test account:", err)
	}
	os.Exit(code)
}

type flakyPid struct {
	Pid int `json:"pid"`
}

func runFlaky() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "flaky", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Returns the process id of this server"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, flakyPid, error) {
			return nil, flakyPid{os.Getpid()}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits the server process in the middle of the call"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, flakyPid, error) {
			os.Exit(3)
			return nil, flakyPid{}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Adds a tool named late (tools/list changes)"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, flakyPid, error) {
			mcp.AddTool(s, &mcp.Tool{Name: "late", Description: "A tool added while the server runs"},
				func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, flakyPid, error) {
					return nil, flakyPid{os.Getpid()}, nil
				})
			return nil, flakyPid{os.Getpid()}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "flaky:", err)
		return 1
	}
	return 0
}

// upstreamsDir is where scripts/deps.sh installs the npm upstream servers.
func upstreamsDir(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "testdata", "upstreams", "node_modules", "@modelcontextprotocol")
	if _, err := os.Stat(filepath.Join(dir, "server-memory")); err != nil {
		t.Skip("npm upstream servers are not installed (run scripts/deps.sh): " + err.Error())
	}
	return dir
}

// upstreamsFile writes an mcpServers file with the npm servers (everything,
// memory, filesystem on fsRoot) and the flaky test server, and returns its
// path.
func upstreamsFile(t testing.TB, fsRoot string) string {
	dir := upstreamsDir(t)
	node, err := lookNode()
	if err != nil {
		t.Skip("node not found: " + err.Error())
	}
	js := func(pkg string) string { return filepath.Join(dir, pkg, "dist", "index.js") }
	servers := map[string]any{
		"everything": map[string]any{"command": node, "args": []string{js("server-everything")}},
		"memory": map[string]any{"command": node, "args": []string{js("server-memory")},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}},
		"filesystem": map[string]any{"command": node, "args": []string{js("server-filesystem"), fsRoot}},
		"flaky": map[string]any{"command": os.Args[0], "env": map[string]string{"CODEXEC_E2E_UPSTREAM": "flaky",
			"FLAKY_SECRET": "${CODEXEC_E2E_SECRET}"}},
	}
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	path := filepath.Join(t.TempDir(), "upstreams.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func lookNode() (string, error) { return exec.LookPath("node") }
