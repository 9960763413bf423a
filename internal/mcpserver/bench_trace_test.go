package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/tracing"
)

// BenchmarkTracingOverhead is the cost of traces on a warm run through the
// whole server (in process, stdio wire, every middleware): the same
// send_to_session x += 1 in a python session, in alternating blocks of
// traceBlock calls (each first in every other pair) so that both see the
// same machine load:
//
//	off    no exporter (as in a server started without OTEL_*, and after
//	       Shutdown): every span is one atomic load, no allocation
//	on     exporting every span over OTLP/HTTP protobuf to a receiver on
//	       loopback in this process that discards the bodies (the default
//	       sampler: every trace; the default batching: up to 512 spans a
//	       batch), each block ending with a flush of what it queued that
//	       is timed with it, so the export is paid inside the block; the
//	       endpoint turns on metric export too, as in a server, so each
//	       call also records the request-duration histogram
//
// It reports, for each, the median over blocks of the mean wall time per
// call (µs) and the CPU this process used per call (every thread: the
// python interpreter is another process and is not in it), and the
// ratios on/off of both. Wall ratios move with the machine's load; the
// CPU figures hold on a busy machine.
//
//	go test ./internal/mcpserver -run '^$' -bench TracingOverhead -benchtime 1000x
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
	settle(b)
	var offWall, onWall, offCPU, onCPU []time.Duration
	block := func(wall, cpu *[]time.Duration, flush bool) {
		t0, c0 := time.Now(), processCPU()
		for range traceBlock {
			call("send_to_session", send)
		}
		if flush {
			if err := tracing.ForceFlush(ctx); err != nil {
				b.Fatal(err)
			}
		}
		*wall = append(*wall, time.Since(t0)/traceBlock)
		*cpu = append(*cpu, (processCPU()-c0)/traceBlock)
	}
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	c, err := tracing.ConfigFromEnv(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL}[k]
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	traced := func() {
		shutdown, err := tracing.Setup(ctx, c, "bench")
		if err != nil {
			b.Fatal(err)
		}
		block(&onWall, &onCPU, true)
		if err := shutdown(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < max(b.N, 2*traceBlock); i += 2 * traceBlock {
		if i/(2*traceBlock)%2 == 0 { // either goes first in turn, so that neither always follows the other
			block(&offWall, &offCPU, false)
			traced()
		} else {
			traced()
			block(&offWall, &offCPU, false)
		}
	}
	if exports.Load() == 0 {
		b.Fatal("tracing on exported nothing to the receiver")
	}
	report := func(d time.Duration, unit string) { b.ReportMetric(float64(d.Nanoseconds())/1e3, unit) }
	report(p50(offWall), "off-µs")
	report(p50(onWall), "on-µs")
	report(p50(offCPU), "off-cpu-µs")
	report(p50(onCPU), "on-cpu-µs")
	b.ReportMetric(float64(p50(onWall))/float64(p50(offWall)), "on/off")
	b.ReportMetric(float64(p50(onCPU))/float64(p50(offCPU)), "cpu-on/off")
	b.ReportMetric(0, "ns/op")
}

// settle waits, up to 30 s, until the server does nothing by itself (its
// start-up health check has run), so that its work is not counted in the
// first blocks.
func settle(b *testing.B) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		c0 := processCPU()
		time.Sleep(500 * time.Millisecond)
		if processCPU()-c0 < 25*time.Millisecond {
			return
		}
	}
	b.Log("the server kept busy for 30 s before the benchmark; figures include its background work")
}

// processCPU is the CPU time (user and system) of every thread of this
// process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
