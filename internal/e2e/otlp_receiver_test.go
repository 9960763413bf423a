package e2e

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/codexec/codexec/internal/tracing/otlpsink"
)

// otlpReceiver is a real OTLP/HTTP receiver on loopback: it decodes each
// ExportTraceServiceRequest (protobuf) the server posts to /v1/traces and
// keeps its spans, with the service name of their resource, and each
// ExportMetricsServiceRequest posted to /v1/metrics and keeps its metrics.
type otlpReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	service map[*tracepb.Span]string
	metrics []*metricspb.Metric
	bad     []string // requests that were not OTLP protobuf
}

func newOTLPReceiver(t testing.TB) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{service: map[*tracepb.Span]string{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var reply proto.Message
	if req.Header.Get("Content-Type") == "application/x-protobuf" {
		switch req.URL.Path {
		case "/v1/traces":
			reply = r.keepSpans(body)
		case "/v1/metrics":
			reply = r.keepMetrics(body)
		}
	}
	if reply == nil {
		r.mu.Lock()
		r.bad = append(r.bad, req.Method+" "+req.URL.Path+" "+req.Header.Get("Content-Type"))
		r.mu.Unlock()
		http.Error(w, "not an OTLP protobuf trace or metric export", http.StatusBadRequest)
		return
	}
	out, _ := proto.Marshal(reply)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// keepSpans keeps the spans of a trace export; nil if body is not one.
func (r *otlpReceiver) keepSpans(body []byte) proto.Message {
	var msg coltracepb.ExportTraceServiceRequest
	if proto.Unmarshal(body, &msg) != nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range msg.ResourceSpans {
		svc := attrString(rs.GetResource().GetAttributes(), "service.name")
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				r.spans = append(r.spans, sp)
				r.service[sp] = svc
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}
}

// keepMetrics keeps the metrics of a metric export; nil if body is not one.
func (r *otlpReceiver) keepMetrics(body []byte) proto.Message {
	var msg colmetricspb.ExportMetricsServiceRequest
	if proto.Unmarshal(body, &msg) != nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rm := range msg.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			r.metrics = append(r.metrics, sm.Metrics...)
		}
	}
	return &colmetricspb.ExportMetricsServiceResponse{}
}

// env is the server environment that exports to this receiver quickly.
func (r *otlpReceiver) env(extra ...string) []string {
	return append([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.srv.URL, "OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_SERVICE_NAME=codexec-e2e"}, extra...)
}

// trace returns the spans of traceID (hex) once every name in want is
// among them, failing the test after a timeout.
func (r *otlpReceiver) trace(t testing.TB, traceID string, want ...string) []*tracepb.Span {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := r.spansOf(traceID)
		missing := missingNames(got, want)
		if len(missing) == 0 {
			return got
		}
		if time.Now().After(deadline) {
			r.mu.Lock()
			bad := r.bad
			r.mu.Unlock()
			t.Fatalf("trace %s: spans %v missing after 20 s; got %v (refused requests: %v)", traceID, missing, spanNames(got), bad)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *otlpReceiver) spansOf(traceID string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, sp := range r.spans {
		if hex.EncodeToString(sp.TraceId) == traceID {
			out = append(out, sp)
		}
	}
	return out
}

// all is every span received so far.
func (r *otlpReceiver) all() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

func missingNames(spans []*tracepb.Span, want []string) []string {
	var missing []string
	for _, w := range want {
		if byName(spans, w) == nil {
			missing = append(missing, w)
		}
	}
	return missing
}

func spanNames(spans []*tracepb.Span) []string {
	out := make([]string, len(spans))
	for i, sp := range spans {
		out[i] = sp.Name
	}
	return out
}

// byName is the first span called name, or nil.
func byName(spans []*tracepb.Span, name string) *tracepb.Span {
	for _, sp := range spans {
		if sp.Name == name {
			return sp
		}
	}
	return nil
}

// childrenOf is the names of parent's direct children.
func childrenOf(spans []*tracepb.Span, parent *tracepb.Span) []string {
	var out []string
	for _, sp := range spans {
		if string(sp.ParentSpanId) == string(parent.SpanId) {
			out = append(out, sp.Name)
		}
	}
	return out
}

// descends reports whether sp has anc as an ancestor within spans.
func descends(spans []*tracepb.Span, sp, anc *tracepb.Span) bool {
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[string(s.SpanId)] = s
	}
	for cur := sp; cur != nil; cur = byID[string(cur.ParentSpanId)] {
		if string(cur.ParentSpanId) == string(anc.SpanId) {
			return true
		}
	}
	return false
}

// attrString is the value of attribute key in attrs as text ("" when absent).
func attrString(attrs []*commonpb.KeyValue, key string) string { return otlpsink.AttrOf(attrs, key) }

// everyValue is every attribute value of spans, their events and
// resources as text, and the span and event names: what a collector
// would store.
func everyValue(spans []*tracepb.Span) string {
	var b strings.Builder
	for _, sp := range spans {
		b.WriteString(sp.Name + "\n" + sp.GetStatus().GetMessage() + "\n")
		for _, kv := range sp.Attributes {
			b.WriteString(kv.Key + "=" + kv.Value.String() + "\n")
		}
		for _, ev := range sp.Events {
			b.WriteString(ev.Name + "\n")
			for _, kv := range ev.Attributes {
				b.WriteString(kv.Key + "=" + kv.Value.String() + "\n")
			}
		}
	}
	return b.String()
}
