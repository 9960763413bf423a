//go:build !notrace

package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// BenchmarkRequestSpans is the CPU cost of the spans of one warm session
// send (the request's server span with its attributes and its three
// children: session.run, artifacts, execlog.write; the waits for a slot
// and for the session are not recorded when there was none),
// including their export: each run ends with a flush of everything queued
// inside the timing, to an OTLP/HTTP receiver on loopback that discards
// the bodies (so its own decoding is not blamed on codexec). Off is the
// default, no exporter. cpu-ns/op is the CPU of every thread of the
// process per request (wall ns/op grows with the machine's load). Compare
// it with a warm run (~750 µs on the project's machine):
//
//	go test ./internal/tracing -run '^$' -bench RequestSpans -benchmem
func BenchmarkRequestSpans(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchRequestSpans(b, false) })
	b.Run("on", func(b *testing.B) { benchRequestSpans(b, true) })
}

func benchRequestSpans(b *testing.B, on bool) {
	ctx := context.Background()
	var exports atomic.Int64
	if on {
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			exports.Add(1)
			w.Header().Set("Content-Type", "application/x-protobuf")
		}))
		defer rcv.Close()
		b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
		shutdown, err := Setup(ctx, Config{Endpoint: rcv.URL, Protocol: "http/protobuf", ServiceName: "bench"}, "bench")
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := shutdown(ctx); err != nil {
				b.Fatal(err)
			}
			if exports.Load() == 0 {
				b.Fatal("nothing was exported")
			}
		}()
	}
	server, child := Tracer("bench/server"), Tracer("bench/child")
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		requestTree(ctx, server, child)
	}
	if on {
		if err := ForceFlush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time (user and system) this process has used, on
// every thread: the exporter's goroutines and the receiver's included, so
// the figure holds on a busy machine where wall time does not.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// requestTree records what the server records for one session send.
func requestTree(ctx context.Context, server, child trace.Tracer) {
	if !On() {
		ctx, span := Start(ctx, server, "tools/call send_to_session")
		Waited(ctx, child, "admission", time.Now(), nil)
		Waited(ctx, child, "session.acquire", time.Now(), nil)
		for _, n := range []string{"session.run", "artifacts", "execlog.write"} {
			_, c := Start(ctx, child, n)
			End(c, nil)
		}
		span.End()
		return
	}
	ctx, span := server.Start(ctx, "tools/call send_to_session", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"),
			attribute.String("gen_ai.tool.name", "send_to_session"),
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("mcp.protocol.version", "2025-11-25")))
	Waited(ctx, child, "admission", time.Now(), nil)
	Waited(ctx, child, "session.acquire", time.Now(), nil)
	for _, n := range []string{"session.run", "artifacts", "execlog.write"} {
		_, c := Start(ctx, child, n)
		End(c, nil)
	}
	_ = TraceID(ctx)
	span.End()
}
