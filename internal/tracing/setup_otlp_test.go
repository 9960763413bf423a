//go:build !notrace

package tracing

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/codexec/codexec/internal/tracing/otlpsink"
)

func TestSetupRefusesBadEndpoint(t *testing.T) {
	for _, ep := range []string{"collector:4318", "ftp://c:4318", "http://"} {
		_, err := Setup(context.Background(), Config{Endpoint: ep, Protocol: "http/protobuf", ServiceName: "codexec"}, "test")
		if err == nil || !strings.Contains(err.Error(), "give a URL") {
			t.Errorf("Setup(%q) err = %v, want a URL error", ep, err)
		}
	}
	if On() {
		t.Fatal("a refused setup turned tracing on")
	}
}

func TestWaitedRecordsOnlyRealWaits(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	on.Store(true)
	t.Cleanup(func() { on.Store(false); otel.SetTracerProvider(prev); _ = tp.Shutdown(context.Background()) })
	tr := Tracer("test")
	ctx := context.Background()
	now := time.Now()
	tests := []struct {
		name  string
		start time.Time
		err   error
		want  bool
	}{
		{"free slot: not recorded", time.Time{}, nil, false}, // starts at the call
		{"waited: recorded", now.Add(-2 * MinWait), nil, true},
		{"refused at once: recorded", now, errors.New("busy"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			exp.Reset()
			start := tc.start
			if start.IsZero() {
				start = time.Now()
			}
			Waited(ctx, tr, "admission", start, tc.err)
			got := exp.GetSpans()
			if !tc.want && len(got) == 1 && time.Since(start) >= MinWait {
				// A loaded machine paused the test past MinWait between
				// the wait's start and its end: it was a real wait then.
				t.Skipf("the wait took %v, not a free slot's microseconds", time.Since(start))
			}
			if (len(got) == 1) != tc.want || len(got) > 1 {
				t.Fatalf("recorded %d spans, want recorded=%v", len(got), tc.want)
			}
			if !tc.want {
				return
			}
			if !got[0].StartTime.Equal(tc.start) || got[0].EndTime.Before(tc.start) {
				t.Errorf("span from %v to %v, want it to start at the wait's start %v", got[0].StartTime, got[0].EndTime, tc.start)
			}
			if (got[0].Status.Code == codes.Error) != (tc.err != nil) {
				t.Errorf("status %v for err %v", got[0].Status, tc.err)
			}
		})
	}
}

// TestMetricsExport: with metric export on (to a real OTLP/HTTP receiver
// on loopback), a request recorded with RecordOperation arrives as the
// mcp.server.operation.duration histogram in seconds with its attributes,
// and the registry given to ExportRegistry arrives through the bridge;
// after Shutdown metrics are off again.
func TestMetricsExport(t *testing.T) {
	rcv := otlpsink.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	reg := prometheus.NewRegistry()
	runs := prometheus.NewCounter(prometheus.CounterOpts{Name: "codexec_test_runs_total", Help: "runs"})
	reg.MustRegister(runs)
	runs.Add(3)
	ExportRegistry(reg)
	t.Cleanup(func() { exported.g.Store(nil) })
	ctx := context.Background()
	shutdown, err := Setup(ctx, Config{ServiceName: "test", Metrics: MetricsConfig{Endpoint: rcv.URL, Interval: time.Hour}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if !MetricsOn() || On() {
		t.Fatalf("MetricsOn() = %v, On() = %v; want metrics on and traces off", MetricsOn(), On())
	}
	RecordOperation(ctx, 0.25, attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", "execute_code"))
	if err := shutdown(ctx); err != nil { // flushes the last export
		t.Fatal(err)
	}
	if MetricsOn() {
		t.Fatal("metrics still on after Shutdown")
	}
	byName := map[string]*metricspb.Metric{}
	for _, m := range rcv.Metrics() {
		byName[m.Name] = m
	}
	op := byName[OperationDuration]
	if op == nil || op.GetHistogram() == nil || len(op.GetHistogram().DataPoints) != 1 {
		t.Fatalf("no %s histogram with one point among %v", OperationDuration, slices.Collect(maps.Keys(byName)))
	}
	dp := op.GetHistogram().DataPoints[0]
	if op.Unit != "s" || dp.Count != 1 || dp.GetSum() != 0.25 || attrTool(dp) != "execute_code" {
		t.Errorf("%s: unit %q count %d sum %v tool %q; want s, 1, 0.25, execute_code", OperationDuration, op.Unit, dp.Count, dp.GetSum(), attrTool(dp))
	}
	c := byName["codexec_test_runs_total"]
	if c == nil || c.GetSum() == nil || len(c.GetSum().DataPoints) != 1 || c.GetSum().DataPoints[0].GetAsDouble() != 3 {
		t.Errorf("bridged counter codexec_test_runs_total = %v, want a sum of 3", c)
	}
}

// attrTool is a data point's gen_ai.tool.name.
func attrTool(dp *metricspb.HistogramDataPoint) string {
	return otlpsink.AttrOf(dp.Attributes, "gen_ai.tool.name")
}
