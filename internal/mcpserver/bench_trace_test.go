package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/tracing"
)

// BenchmarkTracingOverhead is the cost of traces on a warm run through the
// whole server (in process, stdio wire, every middleware): the same
// send_to_session x += 1 in a python session, in alternating blocks of
// traceBlock calls so that both see the same machine load:
//
//	off    no exporter (as in a server started without OTEL_*, and after
//	       Shutdown): every span is one atomic load, no allocation
//	on     exporting every span over OTLP/HTTP protobuf to a receiver on
//	       loopback in this process (the default sampler: every trace),
//	       a batch every 10 ms so that exports happen during the block
//
// Each reports p50 µs per call; on/off is the ratio of the p50s.
//
//	go test ./internal/mcpserver -run '^$' -bench TracingOverhead -benchtime 400x
//
// traceBlock is how many calls run before tracing is switched.
const traceBlock = 50

func BenchmarkTracingOverhead(b *testing.B) {
	var exports atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		exports.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer rcv.Close()
	ctx := context.Background()
	cs := appClient(b)
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", name, err, res)
		}
		return res
	}
	sid := call("start_session", map[string]any{"language": "python"}).StructuredContent.(map[string]any)["session_id"]
	send := map[string]any{"session_id": sid, "code": "x = 0"}
	call("send_to_session", send)
	send["code"] = "x += 1"
	var off, on []time.Duration
	block := func(into *[]time.Duration) {
		for range traceBlock {
			t0 := time.Now()
			call("send_to_session", send)
			*into = append(*into, time.Since(t0))
		}
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_BSP_SCHEDULE_DELAY": "10"}
	for k, v := range env {
		b.Setenv(k, v)
	}
	c, err := tracing.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < max(b.N, 2*traceBlock); i += 2 * traceBlock {
		block(&off)
		shutdown, err := tracing.Setup(ctx, c, "bench")
		if err != nil {
			b.Fatal(err)
		}
		block(&on)
		if err := shutdown(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if exports.Load() == 0 {
		b.Fatal("tracing on exported nothing to the receiver")
	}
	b.ReportMetric(float64(p50(off).Microseconds()), "off-p50-µs")
	b.ReportMetric(float64(p50(on).Microseconds()), "on-p50-µs")
	b.ReportMetric(float64(p50(on))/float64(p50(off)), "on/off")
	b.ReportMetric(0, "ns/op")
}
