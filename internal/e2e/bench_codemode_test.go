package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// directClient connects a go-sdk client straight to one of the npm upstream
// servers (args after node), as an agent calling its tools directly would.
func directClient(b *testing.B, args ...string) *mcp.ClientSession {
	return directClientEnv(b, nil, args...)
}

func directClientEnv(b *testing.B, env []string, args ...string) *mcp.ClientSession {
	node, err := lookNode()
	if err != nil {
		b.Skip("node not found")
	}
	args[0] = filepath.Join(upstreamsDir(b), args[0], "dist", "index.js")
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cmd := exec.Command(node, args...)
	cmd.Env = append(os.Environ(), env...)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}

// BenchmarkCodeModeCallOverhead compares the p50 latency of everything.echo
// called from sandboxed code-mode code (timed inside the program: channel →
// codexec → upstream → channel) with the same call made directly by a go-sdk
// client to its own server-everything process, in one run.
//
//	go test ./internal/e2e/ -run '^$' -bench CodeModeCallOverhead -benchtime 300x
func BenchmarkCodeModeCallOverhead(b *testing.B) {
	f := startWithUpstreams(b, "CODEXEC_CODEMODE_MAX_CALLS=1000000")
	direct := directClient(b, "server-everything")
	ctx := context.Background()
	args := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}
	var directTimes []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := direct.CallTool(ctx, args); err != nil {
			b.Fatal(err)
		}
		directTimes = append(directTimes, time.Since(t0))
	}
	code := `
    await everything.echo({ message: "warm" });
    const t: number[] = [];
    for (let i = 0; i < N; i++) { const t0 = performance.now(); await everything.echo({ message: "hi" }); t.push(performance.now() - t0); }
    t.sort((a, b) => a - b);
    return t[Math.floor(t.length / 2)];`
	var r codeModeResult
	res := f.callInto("execute_code", map[string]any{"code": code, "context": map[string]any{"N": len(directTimes)}, "tools": []string{"everything.echo"}, "timeout": 300}, &r)
	if res.IsError {
		b.Fatal(text(res))
	}
	sandboxMs := r.Result.(float64)
	directMs := median(directTimes).Seconds() * 1000
	b.ReportMetric(directMs, "direct_p50_ms")
	b.ReportMetric(sandboxMs, "sandboxed_p50_ms")
	b.ReportMetric(sandboxMs-directMs, "overhead_p50_ms")
	b.ReportMetric(sandboxMs/directMs, "ratio")
}

// BenchmarkCodeModeTokenEconomy compares the bytes an agent receives for one
// workflow (list a directory of 300 or 1000 files, keep the *.log names,
// read one, store a summary in the memory server, read it back) done as
// direct tool calls versus one code-mode execute_code call. Reports both and
// the saving; the code-mode answer is a fixed ~0.8 KB, so the saving grows
// with the data the direct calls must carry.
//
//	go test ./internal/e2e/ -run '^$' -bench CodeModeTokenEconomy -benchtime 1x
func BenchmarkCodeModeTokenEconomy(b *testing.B) {
	for _, n := range []int{300, 1000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) { tokenEconomy(b, n) })
	}
}

func tokenEconomy(b *testing.B, files int) {
	f := startWithUpstreams(b)
	writeFilesN(b, f.fsRoot, files)
	fs := directClient(b, "server-filesystem", f.fsRoot)
	mem := directClientEnv(b, []string{"MEMORY_FILE_PATH=" + filepath.Join(b.TempDir(), "m.jsonl")}, "server-memory")
	ctx := context.Background()
	for b.Loop() {
		direct := 0
		call := func(cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil || res.IsError {
				b.Fatalf("%s: %v %+v", name, err, res)
			}
			data, _ := json.Marshal(res)
			direct += len(data)
			return res
		}
		call(fs, "list_directory", map[string]any{"path": f.fsRoot})
		call(fs, "read_text_file", map[string]any{"path": filepath.Join(f.fsRoot, "keep050.log")})
		call(mem, "create_entities", map[string]any{"entities": []any{map[string]any{"name": "logs", "entityType": "summary", "observations": []string{"6 logs"}}}})
		call(mem, "open_nodes", map[string]any{"names": []string{"logs"}})
		res := f.call("execute_code", map[string]any{"code": chainCode, "context": map[string]any{"ROOT": f.fsRoot},
			"tools": []string{"filesystem.list_directory", "filesystem.read_text_file", "memory.*"}})
		if res.IsError {
			b.Fatal(text(res))
		}
		data, _ := json.Marshal(res)
		b.ReportMetric(float64(direct), "direct_bytes")
		b.ReportMetric(float64(len(data)), "codemode_bytes")
		b.ReportMetric(100*(1-float64(len(data))/float64(direct)), "pct_fewer")
	}
}

// chainCode is the code-mode form of the token-economy workflow.
const chainCode = `
    const listing = await filesystem.list_directory({ path: ROOT });
    const logs = String(listing.content ?? listing).split("\n").filter((l: string) => l.includes(".log")).map((l: string) => l.replace("[FILE] ", ""));
    const file = await filesystem.readTextFile({ path: ROOT + "/" + logs[1] });
    await memory.create_entities({ entities: [{ name: "logs", entityType: "summary", observations: [logs.length + " logs"] }] });
    const g = await memory.openNodes({ names: ["logs"] });
    return { logs: logs.length, bytes: String(file.content ?? file).length, stored: g.entities[0].observations };`

// BenchmarkCodeModeToolsListGrowth measures tools/list with no upstreams and
// with five configured: it grows by search_tools alone, while the five
// servers' own tool schemas (what a pass-through gateway would list) stay
// out of the agent's context until it asks.
//
//	go test ./internal/e2e/ -run '^$' -bench CodeModeToolsListGrowth -benchtime 1x
func BenchmarkCodeModeToolsListGrowth(b *testing.B) {
	root := b.TempDir()
	file := upstreamsFile(b, root)
	var cfg map[string]map[string]any
	data, _ := os.ReadFile(file)
	_ = json.Unmarshal(data, &cfg)
	cfg["mcpServers"]["everything2"] = cfg["mcpServers"]["everything"]
	data, _ = json.Marshal(cfg)
	_ = os.WriteFile(file, data, 0o600)
	plain := start(b)
	gw := start(b, "CODEXEC_UPSTREAMS="+file)
	var upstreamBytes int
	for _, cs := range []*mcp.ClientSession{directClient(b, "server-everything"), directClient(b, "server-everything"), directClientEnv(b, []string{"MEMORY_FILE_PATH=" + filepath.Join(root, "m.jsonl")}, "server-memory"), directClient(b, "server-filesystem", root)} {
		upstreamBytes += listBytes(b, cs)
	}
	for b.Loop() {
		base, with := listBytes(b, plain.Session), listBytes(b, gw.Session)
		res, _ := gw.Session.ListTools(context.Background(), nil)
		baseRes, _ := plain.Session.ListTools(context.Background(), nil)
		if len(res.Tools) != len(baseRes.Tools)+1 || !slices.ContainsFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == "search_tools" }) {
			b.Fatalf("tools/list grew by more than search_tools: %d → %d tools", len(baseRes.Tools), len(res.Tools))
		}
		b.ReportMetric(float64(base), "base_bytes")
		b.ReportMetric(float64(with-base), "growth_bytes")
		b.ReportMetric(float64(upstreamBytes), "npm_upstream_schema_bytes")
		b.ReportMetric(float64(len(res.Tools)), "tools_listed")
	}
}

func listBytes(b *testing.B, cs *mcp.ClientSession) int {
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	data, _ := json.Marshal(res.Tools)
	return len(data)
}
