package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// upstreamFixture is a codexec server with real upstream MCP servers.
type upstreamFixture struct {
	*server
	fsRoot string
}

func startWithUpstreams(t testing.TB, env ...string) *upstreamFixture {
	t.Helper()
	root := t.TempDir()
	file := upstreamsFile(t, root)
	env = append([]string{"CODEXEC_UPSTREAMS=" + file, "CODEXEC_E2E_SECRET=s3cret"}, env...)
	return &upstreamFixture{server: start(t, env...), fsRoot: root}
}

// codeMode runs execute_code in code mode and decodes the 004 result.
func (f *upstreamFixture) codeMode(t *testing.T, args map[string]any) (codeModeResult, bool) {
	t.Helper()
	var r codeModeResult
	res := f.callInto("execute_code", args, &r)
	return r, res.IsError
}

func mustOK(t *testing.T, r codeModeResult, isErr bool) {
	t.Helper()
	if isErr || r.Error != nil {
		t.Fatalf("code mode failed: %+v (status %s, stderr %q)", r.Error, r.Status, r.Stderr)
	}
}

func resultJSON(r codeModeResult) string {
	b, _ := json.Marshal(r.Result)
	return string(b)
}

func TestCodeModeUpstreams(t *testing.T) {
	f := startWithUpstreams(t, "CODEXEC_TOOL_POLICY=!*.delete_*")
	writeFiles(t, f.fsRoot)
	t.Run("chain and filter", func(t *testing.T) { testChain(t, f) })
	t.Run("intent injects the right tools", func(t *testing.T) { testIntent(t, f) })
	t.Run("search_tools", func(t *testing.T) { testSearchTools(t, f) })
	t.Run("denied tool", func(t *testing.T) { testDenied(t, f) })
	t.Run("promise all", func(t *testing.T) { testPromiseAll(t, f) })
	t.Run("crash and restart", func(t *testing.T) { testCrash(t, f) })
	t.Run("list changed", func(t *testing.T) { testListChanged(t, f) })
	t.Run("python", func(t *testing.T) { testPythonBindings(t, f) })
	t.Run("no network", func(t *testing.T) { testNoNetwork(t, f) })
	t.Run("readme example", func(t *testing.T) { testReadmeExample(t, f) })
}

// testReadmeExample runs the guide's (docs/guide.md) adaptation of 004's example.
func testReadmeExample(t *testing.T, f *upstreamFixture) {
	dir := filepath.Join(f.fsRoot, "app-logs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFilesN(t, dir, 120)
	if err := os.WriteFile(filepath.Join(dir, "keep000.log"), []byte("ok\nERROR boom\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code := `
    const listing = await filesystem.listDirectory({ path: root });         // 1000s of lines stay in the sandbox
    const logs = String(listing.content ?? listing).split("\n").filter(l => l.endsWith(".log"));
    const [a, b] = await Promise.all(logs.slice(0, 2).map(l =>
      filesystem.readTextFile({ path: root + "/" + l.replace("[FILE] ", ""), tail: 20 })));
    await memory.createEntities({ entities: [{ name: "app-logs", entityType: "summary",
      observations: [logs.length + " log files"] }] });
    return { total: logs.length, errors: [a, b].filter(t => String(t.content ?? t).includes("ERROR")).length };
  `
	r, isErr := f.codeMode(t, map[string]any{"code": code, "context": map[string]any{"root": dir},
		"intent": "summarise the app's log files into the knowledge graph",
		"tools":  []string{"filesystem.list_directory", "filesystem.read_text_file", "memory.create_entities"}})
	mustOK(t, r, isErr)
	if got := resultJSON(r); got != `{"errors":1,"total":3}` {
		t.Errorf("result %s", got)
	}
}

// TestCodeModeUpstreamsDocker runs the channel-dependent cases in docker
// mode (podman where docker has no engine), whose containers pass only
// stdio and have no network.
func TestCodeModeUpstreamsDocker(t *testing.T) {
	sameInEveryMode(t, "pins docker mode")
	upstreamsDir(t)
	denv, why := dockerTestEnv(t, "node")
	if why != "" {
		t.Skip(why)
	}
	env := append([]string{"CODEXEC_SANDBOX_MODE=docker"}, denv...)
	if why := modeAvailable(t, "docker", env[1:]...); why != "" {
		t.Skip("docker mode unavailable: " + why)
	}
	f := startWithUpstreams(t, env...)
	var probe codeModeResult
	f.callInto("execute_code", map[string]any{"code": "return 1"}, &probe)
	if probe.Status == "setup_error" && probe.ErrorMessage != nil && strings.Contains(*probe.ErrorMessage, "health check under docker sandbox failed") {
		t.Skip("containers cannot run node here right now: " + *probe.ErrorMessage)
	}
	writeFiles(t, f.fsRoot)
	t.Run("chain and filter", func(t *testing.T) { testChain(t, f) })
	t.Run("promise all", func(t *testing.T) { testPromiseAll(t, f) })
	t.Run("crash and restart", func(t *testing.T) { testCrash(t, f) })
	t.Run("python", func(t *testing.T) { testPythonBindings(t, f) })
	t.Run("no network", func(t *testing.T) { testNoNetwork(t, f) })
}

// writeFiles puts 300 files in dir, six of them *.log.
func writeFiles(t testing.TB, dir string) { writeFilesN(t, dir, 300) }

// writeFilesN puts n files in dir, every 50th a *.log.
func writeFilesN(t testing.TB, dir string, n int) {
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("f%03d.txt", i)
		if i%50 == 0 {
			name = fmt.Sprintf("keep%03d.log", i)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Repeat("x", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// testChain lists a 300-entry directory, filters it in the sandbox, reads a
// file and stores a summary in the memory server: three chained calls whose
// large intermediate result never reaches the agent.
func testChain(t *testing.T, f *upstreamFixture) {
	code := `
    const listing = await filesystem.list_directory({ path: ROOT });
    const logs = String(listing.content ?? listing).split("\n").filter((l: string) => l.includes(".log")).map((l: string) => l.replace("[FILE] ", ""));
    const file = await filesystem.readTextFile({ path: ROOT + "/" + logs[1] });
    const text = file.content ?? file;
    await memory.create_entities({ entities: [{ name: "logs", entityType: "summary", observations: [logs.length + " logs", "second has " + text.length + " bytes"] }] });
    const g = await memory.openNodes({ names: ["logs"] });
    return { logs: logs.length, first: logs[0], stored: g.entities[0].observations };
  `
	r, isErr := f.codeMode(t, map[string]any{"code": code, "context": map[string]any{"ROOT": f.fsRoot},
		"tools": []string{"filesystem.list_directory", "filesystem.read_text_file", "memory.*"}})
	mustOK(t, r, isErr)
	if got, want := resultJSON(r), `{"first":"keep000.log","logs":6,"stored":["6 logs","second has 50 bytes"]}`; got != want {
		t.Fatalf("result %s, want %s", got, want)
	}
	var log struct {
		ToolCalls []struct {
			Server, Tool string
			ArgBytes     int     `json:"arg_bytes"`
			ResultBytes  int     `json:"result_bytes"`
			DurationMs   float64 `json:"duration_ms"`
			Error        string
		} `json:"tool_calls"`
		Intent string
	}
	f.callInto("get_execution_log", map[string]any{"execution_id": r.ExecutionID}, &log)
	if len(log.ToolCalls) != 4 {
		t.Fatalf("logged calls %+v", log.ToolCalls)
	}
	first := log.ToolCalls[0]
	if first.Server != "filesystem" || first.Tool != "list_directory" || first.ResultBytes < 4000 || first.ArgBytes == 0 {
		t.Errorf("first logged call %+v", first)
	}
	if r.Metrics.OutputSizeBytes*10 > first.ResultBytes {
		t.Errorf("returned %d bytes for a %d-byte listing: the filtering did not happen in the sandbox", r.Metrics.OutputSizeBytes, first.ResultBytes)
	}
}

func testIntent(t *testing.T, f *upstreamFixture) {
	code := `
    await memory.createEntities({ entities: [{ name: "ada", entityType: "person", observations: ["wrote the first program"] }] });
    const found = await memory.searchNodes({ query: "ada" });
    return found.entities.map((e: any) => e.name);
  `
	r, isErr := f.codeMode(t, map[string]any{"code": code, "intent": "create entities in the knowledge graph and search nodes"})
	mustOK(t, r, isErr)
	if got := resultJSON(r); got != `["ada"]` {
		t.Fatalf("result %s", got)
	}
	// An intent about files binds no memory tool.
	r, isErr = f.codeMode(t, map[string]any{"code": `return [typeof memory, Object.keys(filesystem).includes("readTextFile")]`, "intent": "read the text of a file"})
	mustOK(t, r, isErr)
	if got := resultJSON(r); got != `["undefined",true]` {
		t.Errorf("bindings for a file intent: %s", got)
	}
	r, isErr = f.codeMode(t, map[string]any{"code": `return await everything.getSum({ a: 2, b: 40 })`, "intent": "sum of two numbers"})
	mustOK(t, r, isErr)
	if got := resultJSON(r); !strings.Contains(got, "42") {
		t.Errorf("get-sum result %s", got)
	}
}

func testSearchTools(t *testing.T, f *upstreamFixture) {
	var out struct {
		Tools []struct{ Name, Signature, Doc string }
		DTS   string
	}
	res := f.callInto("search_tools", map[string]any{"query": "read a text file", "limit": 3, "dts": true}, &out)
	if res.IsError || len(out.Tools) == 0 {
		t.Fatalf("search_tools: %s", text(res))
	}
	if out.Tools[0].Name != "filesystem.read_text_file" {
		t.Errorf("top match %+v", out.Tools)
	}
	if !strings.Contains(out.Tools[0].Signature, "filesystem.readTextFile(args: { head?: number; path: string; tail?: number })") {
		t.Errorf("signature %q", out.Tools[0].Signature)
	}
	if !strings.Contains(out.DTS, "declare const filesystem: {") || !strings.Contains(out.DTS, "read_text_file(args: {") {
		t.Errorf("dts %s", out.DTS)
	}
	res = f.callInto("search_tools", map[string]any{"query": "delete entities"}, &out)
	for _, m := range out.Tools {
		if strings.Contains(m.Name, "delete_") {
			t.Errorf("denied tool %s offered by search_tools", m.Name)
		}
	}
}

func testDenied(t *testing.T, f *upstreamFixture) {
	r, isErr := f.codeMode(t, map[string]any{"code": `
    try { await memory.deleteEntities({ entityNames: ["ada"] }); return "deleted"; }
    catch (e: any) { return e.name + ": " + e.message; }`, "tools": []string{"memory.*"}})
	mustOK(t, r, isErr)
	if got := resultJSON(r); !strings.Contains(got, "ToolError: tool memory.delete_entities is denied by CODEXEC_TOOL_POLICY") {
		t.Errorf("denied call gave %s", got)
	}
	res := f.call("execute_code", map[string]any{"code": `return 1`, "tools": []string{"memory.delete_entities"}})
	if !res.IsError || !strings.Contains(text(res), "CODEXEC_TOOL_POLICY") {
		t.Errorf("naming a denied tool: %s", text(res))
	}
}

func testPromiseAll(t *testing.T, f *upstreamFixture) {
	code := `
    const sums = await Promise.all(Array.from({ length: 20 }, (_, i) => everything.getSum({ a: i, b: 1000 })));
    return sums.map((s: any) => Number(String(s).match(/(\d+)\D*$/)![1])).reduce((x: number, y: number) => x + y, 0);
  `
	r, isErr := f.codeMode(t, map[string]any{"code": code, "tools": []string{"everything.get-sum"}})
	mustOK(t, r, isErr)
	if got := resultJSON(r); got != "20190" {
		t.Fatalf("sum of 20 concurrent calls %s, want 20190", got)
	}
	var log struct {
		ToolCalls []json.RawMessage `json:"tool_calls"`
	}
	f.callInto("get_execution_log", map[string]any{"execution_id": r.ExecutionID}, &log)
	if len(log.ToolCalls) != 20 {
		t.Errorf("%d calls logged, want 20", len(log.ToolCalls))
	}
}

// testCrash: the upstream dies in the middle of a call; the code sees an
// error, and the next call (same program) restarts the server.
func testCrash(t *testing.T, f *upstreamFixture) {
	code := `
    const before = (await flaky.pid()).pid;
    let err = "";
    try { await flaky.crash(); } catch (e: any) { err = e.message; }
    const after = (await flaky.pid()).pid;
    return { restarted: before !== after && after > 0, err };
  `
	r, isErr := f.codeMode(t, map[string]any{"code": code, "tools": []string{"flaky.*"}})
	mustOK(t, r, isErr)
	var got struct {
		Restarted bool
		Err       string
	}
	_ = json.Unmarshal([]byte(resultJSON(r)), &got)
	if !got.Restarted || !strings.Contains(got.Err, "flaky.crash") {
		t.Fatalf("crash result %s", resultJSON(r))
	}
}

func testListChanged(t *testing.T, f *upstreamFixture) {
	r, isErr := f.codeMode(t, map[string]any{"code": `return await flaky.add_tool()`, "tools": []string{"flaky.add_tool"}})
	mustOK(t, r, isErr)
	var out struct{ Tools []struct{ Name string } }
	for i := 0; i < 50; i++ {
		f.callInto("search_tools", map[string]any{"query": "tool added while the server runs"}, &out)
		if len(out.Tools) > 0 && out.Tools[0].Name == "flaky.late" {
			break
		}
		sleepMs(100)
	}
	if len(out.Tools) == 0 || out.Tools[0].Name != "flaky.late" {
		t.Fatalf("flaky.late not found after listChanged: %+v", out.Tools)
	}
	r, isErr = f.codeMode(t, map[string]any{"code": `return (await flaky.late()).pid > 0`, "tools": []string{"flaky.late"}})
	mustOK(t, r, isErr)
}

func testPythonBindings(t *testing.T, f *upstreamFixture) {
	code := `
entities = [{"name": "py%d" % i, "entityType": "t", "observations": []} for i in range(3)]
await memory.create_entities({"entities": entities})
found = memory.search_nodes(query="py").result()
sums = await asyncio.gather(*[everything.get_sum(a=i, b=1) for i in range(5)])
print("found", len(found["entities"]))
return {"names": sorted(e["name"] for e in found["entities"]), "sums": len(sums)}
`
	r, isErr := f.codeMode(t, map[string]any{"language": "python", "code": code, "tools": []string{"memory.*", "everything.get-sum"}})
	mustOK(t, r, isErr)
	if got := resultJSON(r); got != `{"names":["py0","py1","py2"],"sums":5}` {
		t.Fatalf("python result %s", got)
	}
	if len(r.Logs) != 1 || r.Logs[0] != "found 3" {
		t.Errorf("logs %q", r.Logs)
	}
}

func sleepMs(n int) { time.Sleep(time.Duration(n) * time.Millisecond) }

// testNoNetwork: code that can call upstream tools still has no network.
func testNoNetwork(t *testing.T, f *upstreamFixture) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	code := `
    const echo = await everything.echo({ message: "via the channel" });
    const net = require("net");
    const reached = await new Promise((resolve) => {
      const s = net.connect(PORT, "127.0.0.1", () => { s.destroy(); resolve(true); });
      s.on("error", () => resolve(false));
      setTimeout(() => resolve(false), 3000);
    });
    return { echo, reached };
  `
	r, isErr := f.codeMode(t, map[string]any{"code": code, "context": map[string]any{"PORT": ln.Addr().(*net.TCPAddr).Port},
		"tools": []string{"everything.echo"}})
	mustOK(t, r, isErr)
	mode := f.sandboxMode(r.ExecutionID)
	if mode == "subprocess" {
		t.Skip("subprocess mode does not isolate the network; the channel worked: " + resultJSON(r))
	}
	if got := resultJSON(r); !strings.Contains(got, "via the channel") || !strings.Contains(got, `"reached":false`) || accepted.Load() != 0 {
		t.Fatalf("sandbox %s: %s (accepted %d)", mode, got, accepted.Load())
	}
}
