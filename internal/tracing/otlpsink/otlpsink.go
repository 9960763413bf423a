// Package otlpsink is an OTLP/HTTP receiver for tests: a real HTTP server
// on loopback that decodes each ExportTraceServiceRequest posted to
// /v1/traces and each ExportMetricsServiceRequest posted to /v1/metrics
// (protobuf) and keeps their spans and metrics, so that a test can check
// what codexec exports through its real exporters.
package otlpsink

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Sink is a running receiver; URL is its base (OTEL_EXPORTER_OTLP_ENDPOINT).
type Sink struct {
	URL     string
	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics []*metricspb.Metric
}

// Start starts a receiver, stopped when the test ends.
func Start(t testing.TB) *Sink {
	s := &Sink{}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var reply proto.Message
	switch r.URL.Path {
	case "/v1/traces":
		var msg coltracepb.ExportTraceServiceRequest
		if proto.Unmarshal(body, &msg) == nil {
			s.keepSpans(&msg)
			reply = &coltracepb.ExportTraceServiceResponse{}
		}
	case "/v1/metrics":
		var msg colmetricspb.ExportMetricsServiceRequest
		if proto.Unmarshal(body, &msg) == nil {
			s.keepMetrics(&msg)
			reply = &colmetricspb.ExportMetricsServiceResponse{}
		}
	}
	if reply == nil {
		http.Error(w, "not an OTLP protobuf trace or metric export", http.StatusBadRequest)
		return
	}
	out, _ := proto.Marshal(reply)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (s *Sink) keepSpans(msg *coltracepb.ExportTraceServiceRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rs := range msg.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			s.spans = append(s.spans, ss.Spans...)
		}
	}
}

func (s *Sink) keepMetrics(msg *colmetricspb.ExportMetricsServiceRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rm := range msg.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			s.metrics = append(s.metrics, sm.Metrics...)
		}
	}
}

// Spans is every span received so far.
func (s *Sink) Spans() []*tracepb.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*tracepb.Span(nil), s.spans...)
}

// Metrics is every metric received so far, one entry per metric per
// export (a cumulative metric exported twice is there twice).
func (s *Sink) Metrics() []*metricspb.Metric {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*metricspb.Metric(nil), s.metrics...)
}

// Attr is the value of sp's attribute key as text ("" when absent).
func Attr(sp *tracepb.Span, key string) string { return AttrOf(sp.Attributes, key) }

// AttrOf is the value of attribute key in attrs as text ("" when absent).
func AttrOf(attrs []*commonpb.KeyValue, key string) string {
	for _, kv := range attrs {
		if kv.Key == key {
			if v, ok := kv.Value.Value.(*commonpb.AnyValue_StringValue); ok {
				return v.StringValue
			}
			return kv.Value.String()
		}
	}
	return ""
}
