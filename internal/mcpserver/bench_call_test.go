package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/app"
	"github.com/codexec/codexec/internal/config"
)

// BenchmarkCallOverhead splits the cost of a send_to_session call into the
// layers it crosses, in one process over in-memory pipes (no process
// boundary, so what remains is CPU and goroutine hand-offs), interleaved
// so that every row sees the same machine load:
//
//	pipe     a JSON-RPC request line and a canned reply line through the
//	         same pipes, no decoding (the floor of any server)
//	sdk      the go-sdk client and server with one tool added through
//	         Server.AddTool, as codexec adds its tools, that returns a
//	         small structured result (the SDK's own share)
//	noop     codexec's list_sessions through the whole server (stdio wire,
//	         middleware, tool.Add's argument and result checks)
//	send     codexec's send_to_session x += 1 in a python session
//	pipe1M, sdk1M  pipe and sdk with 1 MiB of code in the arguments (how
//	         the SDK's decoding grows with the size of a request)
//
// Each row is reported as p50 µs per call, allocations per call, and its
// ratio to pipe:
//
//	go test ./internal/mcpserver -run '^$' -bench CallOverhead -benchtime 2000x
func BenchmarkCallOverhead(b *testing.B) {
	ctx := context.Background()
	big := strings.Repeat("x", 1<<20)
	rows := []struct {
		name string
		call func()
	}{
		{"pipe", pipeRoundTrip(b, "x += 1")},
		{"sdk", sdkCall(b, ctx, "x += 1")},
		{"pipe1M", pipeRoundTrip(b, big)},
		{"sdk1M", sdkCall(b, ctx, big)},
	}
	cs := appClient(b)
	mustCall := func(name string, args map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", name, err, res)
		}
		return res
	}
	sid := mustCall("start_session", map[string]any{"language": "python"}).StructuredContent.(map[string]any)["session_id"]
	mustCall("send_to_session", map[string]any{"session_id": sid, "code": "x = 0"})
	send := map[string]any{"session_id": sid, "code": "x += 1"}
	rows = append(rows,
		struct {
			name string
			call func()
		}{"noop", func() { mustCall("list_sessions", map[string]any{}) }},
		struct {
			name string
			call func()
		}{"send", func() { mustCall("send_to_session", send) }})
	times := make([][]time.Duration, len(rows))
	allocs := make([]uint64, len(rows))
	for b.Loop() {
		for i, r := range rows {
			a0 := heapAllocs()
			t0 := time.Now()
			r.call()
			times[i] = append(times[i], time.Since(t0))
			allocs[i] += heapAllocs() - a0
		}
	}
	base := p50(times[0])
	for i, r := range rows {
		p := p50(times[i])
		b.Logf("%-5s p50 %7.1f µs  allocs/call %6d  ratio to pipe %5.1f", r.name, us(p), allocs[i]/uint64(len(times[i])), float64(p)/float64(base))
		b.ReportMetric(us(p), r.name+"-µs")
	}
}

// heapAllocs is the process's count of heap allocations so far, client,
// server and the sessions' reader goroutines together. ReadMemStats stops
// the world, so it is read outside the timed call.
func heapAllocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }

func p50(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// pipeRoundTrip returns a call that writes a tools/call request line and
// reads a reply line from a goroutine that answers every line with a canned
// result, over io.Pipes.
func pipeRoundTrip(b *testing.B, code string) func() {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	b.Cleanup(func() { _ = cw.Close(); _ = sw.Close() })
	go func() {
		in := bufio.NewReaderSize(sr, 4<<20)
		reply := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"ok\":true}"}],"structuredContent":{"ok":true}}}` + "\n")
		for {
			if _, err := in.ReadSlice('\n'); err != nil {
				return
			}
			if _, err := sw.Write(reply); err != nil {
				return
			}
		}
	}()
	req := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"noop","arguments":{"session_id":"s","code":"` + code + `"}}}` + "\n")
	out := bufio.NewReaderSize(cr, 4<<20)
	return func() {
		if _, err := cw.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := out.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
}

// sdkCall returns a call of a tool on a bare go-sdk server, added the way
// tool.Add adds codexec's (Server.AddTool with input and output schemas, a
// raw handler that returns structured content and its text), over the
// SDK's IOTransport on io.Pipes.
func sdkCall(b *testing.B, ctx context.Context, code string) func() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	in := json.RawMessage(`{"type":"object","properties":{"session_id":{"type":"string"},"code":{"type":"string"}},"required":["session_id","code"]}`)
	out := json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)
	srv.AddTool(&mcp.Tool{Name: "noop", InputSchema: in, OutputSchema: out}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b := json.RawMessage(`{"ok":true}`)
		return &mcp.CallToolResult{StructuredContent: b, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	})
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	sctx, cancel := context.WithCancel(ctx)
	go func() { _ = srv.Run(sctx, &mcp.IOTransport{Reader: sr, Writer: sw, MaxLineLength: -1}) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw, MaxLineLength: -1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close(); cancel(); _ = cw.Close(); _ = sw.Close() })
	args := map[string]any{"session_id": "s", "code": code}
	return func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "noop", Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("noop: %v %+v", err, res)
		}
	}
}

// appClient builds codexec in the host's default sandbox mode and connects
// a go-sdk client to it over the stdio wire.
func appClient(b *testing.B) *mcp.ClientSession {
	dir := b.TempDir()
	cfg := config.Defaults(dir)
	a, err := app.Build(context.Background(), cfg, app.HostEnv{Home: dir, Path: os.Getenv("PATH"), Cwd: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	return stdioClient(b, a)
}
