package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Shutdown flushes the spans not yet exported and stops the exporter,
// waiting at most until ctx ends.
type Shutdown func(ctx context.Context) error

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
	on.Store(true)
	return func(ctx context.Context) error {
		on.Store(false)
		return tp.Shutdown(ctx)
	}, nil
}

// checkEndpoint refuses an endpoint the exporter would only fail on at the
// first export, long after start.
func checkEndpoint(ep string) error {
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("OTLP endpoint %q: give a URL such as http://collector:4318 (http or https, with a host)", ep)
	}
	if strings.Contains(u.Host, " ") {
		return fmt.Errorf("OTLP endpoint %q: the host has a space", ep)
	}
	return nil
}
