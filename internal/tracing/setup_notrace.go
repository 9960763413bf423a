//go:build notrace

package tracing

import (
	"context"
	"fmt"
)

// Setup, in a build without the exporter (tag notrace), accepts only a
// configuration with tracing and metric export off: asked to export, it
// refuses with what to do rather than start a server that silently
// exports nothing.
func Setup(_ context.Context, c Config, _ string) (Shutdown, error) {
	if c.Enabled() {
		return nil, fmt.Errorf("OTLP endpoint %q is set, but this codexec was built without the trace exporter (build tag notrace): "+
			"unset OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (and set OTEL_METRICS_EXPORTER=none, or set OTEL_SDK_DISABLED=true), or run a build made without -tags notrace", c.Endpoint)
	}
	if c.MetricsEnabled() {
		return nil, fmt.Errorf("OTLP metric export is asked for (OTEL_METRICS_EXPORTER=otlp or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT), but this codexec was built without the exporter (build tag notrace): " +
			"set OTEL_METRICS_EXPORTER=none (or OTEL_SDK_DISABLED=true), or run a build made without -tags notrace; /metrics serves the Prometheus metrics either way")
	}
	return func(context.Context) error { return nil }, nil
}

// ForceFlush has nothing to flush in a build without the exporter.
func ForceFlush(context.Context) error { return nil }

// Exporter reports whether this build can export traces and metrics:
// not this one.
const Exporter = false
