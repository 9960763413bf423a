package mcpserver

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"

	"github.com/codexec/codexec/internal/tracing"
	"github.com/codexec/codexec/internal/tracing/otlpsink"
)

// TestTracedOffAllocatesNothing: with traces and metrics export off (the
// default), the outermost middleware costs no allocation per request.
func TestTracedOffAllocatesNothing(t *testing.T) {
	if tracing.On() || tracing.MetricsOn() {
		t.Fatal("export is on in a unit test that set nothing up")
	}
	res := &mcp.CallToolResult{}
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) { return res, nil }
	h := (*Server)(nil).traced(next)
	ctx := context.Background()
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "execute_code"}}
	allocs := testing.AllocsPerRun(1000, func() {
		if got, err := h(ctx, "tools/call", req); got != res || err != nil {
			t.Fatalf("traced changed the result: %v %v", got, err)
		}
	})
	if allocs != 0 {
		t.Errorf("a request with export off allocated %v times in traced; want 0", allocs)
	}
}

// TestOperationAttributes: the duration's attributes are the MCP
// convention's: the method, the tool for tools/call, error.type when the
// request failed, and the transport (pipe for stdio, tcp for HTTP).
func TestOperationAttributes(t *testing.T) {
	overHTTP := &mcp.RequestExtra{Header: http.Header{}}
	tests := []struct {
		name   string
		method string
		req    mcp.Request
		res    mcp.Result
		err    error
		want   []attribute.KeyValue
	}{
		{name: "tool call over stdio", method: "tools/call",
			req:  &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "execute_code"}},
			res:  &mcp.CallToolResult{},
			want: []attribute.KeyValue{attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", "execute_code"), attribute.String("network.transport", "pipe")}},
		{name: "tool error over HTTP", method: "tools/call",
			req:  &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "run_shell"}, Extra: overHTTP},
			res:  &mcp.CallToolResult{IsError: true},
			want: []attribute.KeyValue{attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", "run_shell"), attribute.String("error.type", "tool_error"), attribute.String("network.transport", "tcp")}},
		{name: "JSON-RPC error", method: "tools/list", req: &mcp.ListToolsRequest{},
			err:  &jsonrpc.Error{Code: -32602, Message: "bad"},
			want: []attribute.KeyValue{attribute.String("mcp.method.name", "tools/list"), attribute.String("error.type", "-32602"), attribute.String("network.transport", "pipe")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errType, _ := outcome(tc.res, tc.err)
			got := operationAttributes(tc.method, requestTarget(tc.req), errType, tc.req)
			if d := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b attribute.KeyValue) bool { return a == b })); d != "" {
				t.Errorf("attributes (-want +got):\n%s", d)
			}
		})
	}
}

// BenchmarkTracedMetrics is the cost per request of the outermost
// middleware around a handler that does nothing: off (the default), and
// with metric export on and traces off (recording the request's duration
// in the histogram; the export itself runs every OTEL_METRIC_EXPORT_INTERVAL,
// here an hour, off the request path).
//
//	go test ./internal/mcpserver -run '^$' -bench TracedMetrics -benchmem
func BenchmarkTracedMetrics(b *testing.B) {
	res := &mcp.CallToolResult{}
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) { return res, nil }
	h := (*Server)(nil).traced(next)
	ctx := context.Background()
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "execute_code"}}
	b.Run("off", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = h(ctx, "tools/call", req)
		}
	})
	b.Run("metrics", func(b *testing.B) {
		rcv := otlpsink.Start(b)
		b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
		shutdown, err := tracing.Setup(ctx, tracing.Config{ServiceName: "bench",
			Metrics: tracing.MetricsConfig{Endpoint: rcv.URL, Interval: time.Hour}}, "bench")
		if err != nil {
			b.Fatal(err)
		}
		defer shutdown(ctx)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = h(ctx, "tools/call", req)
		}
	})
}
