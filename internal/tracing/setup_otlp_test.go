//go:build !notrace

package tracing

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
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
