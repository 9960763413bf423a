package tracing

import (
	"context"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// OperationDuration is the MCP semantic convention's histogram of the time
// a server takes to handle one request, in seconds.
const OperationDuration = "mcp.server.operation.duration"

// operationBuckets are the convention's advised bucket boundaries (s).
var operationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// operations is the histogram Setup made, nil while metrics are off: the
// request path reads it first, so off costs one atomic load.
var operations atomic.Pointer[metric.Float64Histogram]

// MetricsOn reports whether metrics are being exported over OTLP. Callers
// use it to skip timing and building attributes nobody records.
func MetricsOn() bool { return operations.Load() != nil }

// RecordOperation records one MCP request of seconds with attrs in the
// mcp.server.operation.duration histogram; while metrics are off it does
// nothing (check MetricsOn first to build no attributes).
func RecordOperation(ctx context.Context, seconds float64, attrs ...attribute.KeyValue) {
	if h := operations.Load(); h != nil {
		(*h).Record(ctx, seconds, metric.WithAttributes(attrs...))
	}
}

// lateGatherer is the Prometheus registry whose metrics are exported over
// OTLP too. The registry is made when the HTTP server is built, after
// Setup, so the export pipeline reads it through this.
type lateGatherer struct {
	g atomic.Pointer[prometheus.Gatherer]
}

// Gather implements prometheus.Gatherer: nothing until a registry is set.
func (l *lateGatherer) Gather() ([]*dto.MetricFamily, error) {
	if g := l.g.Load(); g != nil {
		return (*g).Gather()
	}
	return nil, nil
}

// exported is the registry ExportRegistry set.
var exported lateGatherer

// ExportRegistry makes g's metrics (codexec's Prometheus registry) part
// of every OTLP metric export, read at export time so that nothing is
// recorded twice. Without metrics export it has no effect.
func ExportRegistry(g prometheus.Gatherer) { exported.g.Store(&g) }
