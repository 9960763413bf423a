// Package tracing turns on OpenTelemetry trace and metric export from the
// standard OTEL_* environment variables, once, in main (Setup), and gives
// the other packages a Start that costs nothing while tracing is off.
//
// Metrics go over OTLP/HTTP protobuf when OTEL_METRICS_EXPORTER=otlp or an
// OTLP endpoint is set: the MCP request-duration histogram
// (RecordOperation, free while MetricsOn is false) and the Prometheus
// registry given to ExportRegistry, read through the Prometheus bridge at
// each export so nothing is recorded twice.
//
// Off is the default: with no OTLP endpoint set (or OTEL_SDK_DISABLED=true)
// no exporter or provider is built, the global tracer provider stays the
// no-op one and Start returns its context unchanged without allocating. On,
// spans go over OTLP/HTTP protobuf in batches to the endpoint; the
// exporter itself reads OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout,
// TLS), the SDK reads OTEL_TRACES_SAMPLER/_ARG and OTEL_RESOURCE_ATTRIBUTES.
//
// Every package that records spans keeps one package-level tracer from
// Tracer and starts its spans with Start, so the choice of provider stays
// here. Spans carry names, ids, sizes and outcomes: never code, program
// output, file contents or secrets.
package tracing

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
)

// on is set by Setup once a real provider is installed; Start reads it
// first so that the off path is one atomic load.
var on atomic.Bool

// noopSpan is returned by Start while tracing is off: a zero-size value,
// so returning it as a trace.Span does not allocate.
var noopSpan trace.Span = noop.Span{}

// On reports whether traces are being exported. Callers use it to skip
// building attributes nobody records.
func On() bool { return on.Load() }

// Tracer is the tracer a package records its spans with, named for the
// package (its import path). It resolves the global provider's tracer of
// that name once per provider, not per span (the SDK's lookup takes a
// lock and builds a scope key each time), so a tracer taken before Setup
// ran exports once it has, and one provider replacing another (a test's
// Setup after a Shutdown) takes over its spans.
func Tracer(pkg string) trace.Tracer { return &providerTracer{name: pkg} }

// providerTracer is the global provider's tracer of one name, resolved
// again only when the global provider changes.
type providerTracer struct {
	embedded.Tracer
	name   string
	cached atomic.Pointer[resolved]
}

// resolved is the tracer a provider gave for one name.
type resolved struct {
	provider trace.TracerProvider
	tracer   trace.Tracer
}

// Start implements trace.Tracer.
func (t *providerTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	tp := otel.GetTracerProvider()
	r := t.cached.Load()
	if r == nil || r.provider != tp {
		r = &resolved{provider: tp, tracer: tp.Tracer(t.name)}
		t.cached.Store(r)
	}
	return r.tracer.Start(ctx, name, opts...)
}

// Start starts a span named name as a child of ctx's span when tracing is
// on. Off, it returns ctx itself and a no-op span, allocating nothing.
func Start(ctx context.Context, tr trace.Tracer, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, noopSpan
	}
	return tr.Start(ctx, name, opts...)
}

// TraceID is the id of the trace ctx's span belongs to, in hex, or "" when
// tracing is off or ctx carries no sampled span (a result then has no
// trace_id, since no trace can be found by it).
func TraceID(ctx context.Context) string {
	if !on.Load() {
		return ""
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsSampled() {
		return ""
	}
	return sc.TraceID().String()
}

// Event adds an event to ctx's span when tracing is on and the span
// records; attrs is only called then, so a caller builds no attributes
// for nothing.
func Event(ctx context.Context, name string, attrs func() []trace.EventOption) {
	if !on.Load() {
		return
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent(name, attrs()...)
}

// MinWait is the shortest wait that Waited records as a span: a free slot
// or an uncontended lock takes microseconds, less than the span itself
// would cost to record and export, and says nothing about where a call's
// time went.
const MinWait = 250 * time.Microsecond

// Waited records a wait that began at start and ends now (for an
// execution slot, for a session) as a span named name, a child of ctx's
// span, when tracing is on and the wait failed or lasted MinWait or more;
// a shorter successful wait is not recorded.
func Waited(ctx context.Context, tr trace.Tracer, name string, start time.Time, err error) {
	if !on.Load() {
		return
	}
	now := time.Now()
	if err == nil && now.Sub(start) < MinWait {
		return
	}
	_, span := tr.Start(ctx, name, trace.WithTimestamp(start))
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, fmt.Sprintf("%T", err))
		span.SetAttributes(attribute.String("error.type", fmt.Sprintf("%T", err)))
	}
	span.End(trace.WithTimestamp(now))
}

// End ends span, marking it failed with err's type name when err is not
// nil (the message stays out: it can quote a user's input).
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, fmt.Sprintf("%T", err))
		span.SetAttributes(attribute.String("error.type", fmt.Sprintf("%T", err)))
	}
	span.End()
}
