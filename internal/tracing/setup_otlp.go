//go:build !notrace

package tracing

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Setup installs the global tracer provider and the W3C trace-context
// propagator when c is enabled, and returns the Shutdown that flushes
// them. Off, it installs nothing and its Shutdown does nothing. version is
// reported as service.version. Call it once, before serving.
func Setup(ctx context.Context, c Config, version string) (Shutdown, error) {
	if !c.Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	if err := checkEndpoint(c.Endpoint); err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry trace exporter for %s: %w", c.Endpoint, err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", c.ServiceName), attribute.String("service.version", version)))
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res),
		sdktrace.WithBatcher(exp))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	provider.Store(tp)
	on.Store(true)
	return func(ctx context.Context) error {
		on.Store(false)
		provider.CompareAndSwap(tp, nil)
		return tp.Shutdown(ctx)
	}, nil
}

// provider is the provider Setup installed, for ForceFlush.
var provider atomic.Pointer[sdktrace.TracerProvider]

// ForceFlush exports every span ended so far, waiting at most until ctx
// ends; while tracing is off there is nothing to flush.
func ForceFlush(ctx context.Context) error {
	if tp := provider.Load(); tp != nil {
		return tp.ForceFlush(ctx)
	}
	return nil
}

// Exporter reports whether this build can export traces (it was built
// without the notrace tag).
const Exporter = true
