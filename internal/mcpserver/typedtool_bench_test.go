package mcpserver

import (
	"context"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
)

// BenchmarkToolGlue compares one tools/call of a typed tool shaped like
// send_to_session (In: SendIn, Out: engine.Result with its output schema)
// registered with mcp.AddTool and with registerTyped, each through the SDK
// client over in-memory transports, alternating in one loop.
//
//	go test ./internal/mcpserver/ -run '^$' -bench ToolGlue -benchtime 3000x
func BenchmarkToolGlue(b *testing.B) {
	h := func(context.Context, *mcp.CallToolRequest, SendIn) (*mcp.CallToolResult, engine.Result, error) {
		code := 0
		r := engine.Result{Success: true, ExecutionID: "exec_123456789abc", Language: "python", ExitCode: &code,
			Status: "success", Artifacts: []string{}, SandboxMode: "namespace"}
		return resultText(r), r, nil
	}
	tool := func() *mcp.Tool {
		return &mcp.Tool{Name: "t", InputSchema: schemaOf[SendIn](func(*jsonschema.Schema) {}), OutputSchema: outputSchema[engine.Result]()}
	}
	sdk := glueClient(b, func(s *mcp.Server) { mcp.AddTool(s, tool(), h) })
	ours := glueClient(b, func(s *mcp.Server) { registerTyped(s, tool(), h) })
	args := map[string]any{"session_id": "sess_abc", "code": "x += 1"}
	call := func(cs *mcp.ClientSession) time.Duration {
		t0 := time.Now()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
		return time.Since(t0)
	}
	var tSDK, tOurs time.Duration
	for b.Loop() {
		tSDK += call(sdk)
		tOurs += call(ours)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tSDK.Microseconds())/n, "sdk-us/op")
	b.ReportMetric(float64(tOurs.Microseconds())/n, "ours-us/op")
	b.ReportMetric(float64(tOurs)/float64(tSDK), "ratio")
}

func glueClient(b testing.TB, register func(*mcp.Server)) *mcp.ClientSession {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	register(srv)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}
