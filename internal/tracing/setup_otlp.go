//go:build !notrace

package tracing

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	prombridge "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Setup installs the global tracer provider and the W3C trace-context
// propagator when c.Enabled, and the metric export when c.MetricsEnabled,
// and returns the Shutdown that flushes them. Off, it installs nothing and
// its Shutdown does nothing. version is reported as service.version. Call
// it once, before serving.
func Setup(ctx context.Context, c Config, version string) (_ Shutdown, retErr error) {
	if !c.AnyEnabled() {
		return func(context.Context) error { return nil }, nil
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", c.ServiceName), attribute.String("service.version", version)))
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	stopTraces, err := setupTraces(ctx, c, res)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			_ = stopTraces(context.WithoutCancel(ctx))
		}
	}()
	stopMetrics, err := setupMetrics(ctx, c, res)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		return errors.Join(stopMetrics(ctx), stopTraces(ctx))
	}, nil
}

// setupTraces installs trace export when c.Enabled.
func setupTraces(ctx context.Context, c Config, res *resource.Resource) (Shutdown, error) {
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

// setupMetrics installs metric export when c.MetricsEnabled: the request
// histogram, and codexec's Prometheus registry read through the bridge at
// each export (ExportRegistry names it).
func setupMetrics(ctx context.Context, c Config, res *resource.Resource) (Shutdown, error) {
	if !c.MetricsEnabled() {
		return func(context.Context) error { return nil }, nil
	}
	if c.Metrics.Endpoint != "" {
		if err := checkEndpoint(c.Metrics.Endpoint); err != nil {
			return nil, err
		}
	}
	exp, err := otlpmetrichttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry metric exporter for %s: %w", c.Metrics.Endpoint, err)
	}
	opts := []sdkmetric.PeriodicReaderOption{sdkmetric.WithProducer(prombridge.NewMetricProducer(prombridge.WithGatherer(&exported)))}
	if c.Metrics.Interval > 0 {
		opts = append(opts, sdkmetric.WithInterval(c.Metrics.Interval))
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, opts...)))
	h, err := mp.Meter("github.com/codexec/codexec/internal/mcpserver").Float64Histogram(OperationDuration,
		metric.WithUnit("s"), metric.WithDescription("Duration of the MCP request as observed on the server."),
		metric.WithExplicitBucketBoundaries(operationBuckets...))
	if err != nil {
		_ = mp.Shutdown(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("OpenTelemetry histogram %s: %w", OperationDuration, err)
	}
	meters.Store(mp)
	operations.Store(&h)
	return func(ctx context.Context) error {
		operations.Store(nil)
		meters.CompareAndSwap(mp, nil)
		return mp.Shutdown(ctx)
	}, nil
}

// provider is the provider Setup installed, for ForceFlush.
var provider atomic.Pointer[sdktrace.TracerProvider]

// meters is the meter provider Setup installed, for ForceFlush.
var meters atomic.Pointer[sdkmetric.MeterProvider]

// ForceFlush exports every span ended and every metric recorded so far,
// waiting at most until ctx ends; while export is off there is nothing to
// flush.
func ForceFlush(ctx context.Context) error {
	var errs []error
	if tp := provider.Load(); tp != nil {
		errs = append(errs, tp.ForceFlush(ctx))
	}
	if mp := meters.Load(); mp != nil {
		errs = append(errs, mp.ForceFlush(ctx))
	}
	return errors.Join(errs...)
}

// Exporter reports whether this build can export traces and metrics (it
// was built without the notrace tag).
const Exporter = true
