package tracing

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config is what the standard OTEL_* variables say about trace export,
// checked up front so that a misspelt value fails at start with the fix
// instead of silently exporting nothing.
type Config struct {
	// Endpoint is OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
	// OTEL_EXPORTER_OTLP_ENDPOINT; empty: tracing off.
	Endpoint string
	// Protocol is http/protobuf, the one this build exports with.
	Protocol string
	// ServiceName is OTEL_SERVICE_NAME, default "codexec".
	ServiceName string
	// Sampler is OTEL_TRACES_SAMPLER (the SDK applies it with its _ARG).
	Sampler string
	// Disabled is OTEL_SDK_DISABLED=true: off whatever else is set.
	Disabled bool
	// Metrics is what the variables say about metric export.
	Metrics MetricsConfig
}

// MetricsConfig is what the standard OTEL_* variables say about metric
// export, which runs alongside the Prometheus /metrics endpoint.
type MetricsConfig struct {
	// Exporter is OTEL_METRICS_EXPORTER: "" (unset), "otlp" or "none".
	Exporter string
	// Endpoint is OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, else
	// OTEL_EXPORTER_OTLP_ENDPOINT; empty with Exporter otlp: the
	// exporter's default (http://localhost:4318/v1/metrics).
	Endpoint string
	// Interval is OTEL_METRIC_EXPORT_INTERVAL (milliseconds in the
	// variable); zero: the SDK's default, 60 s.
	Interval time.Duration
}

// Enabled reports whether traces are to be exported.
func (c Config) Enabled() bool { return c.Endpoint != "" && !c.Disabled }

// MetricsEnabled reports whether metrics are to be exported over OTLP:
// OTEL_METRICS_EXPORTER=otlp, or an OTLP endpoint with the exporter
// unset; never with OTEL_METRICS_EXPORTER=none or OTEL_SDK_DISABLED=true.
func (c Config) MetricsEnabled() bool {
	m := c.Metrics
	return !c.Disabled && (m.Exporter == "otlp" || (m.Exporter == "" && m.Endpoint != ""))
}

// AnyEnabled reports whether traces or metrics are to be exported.
func (c Config) AnyEnabled() bool { return c.Enabled() || c.MetricsEnabled() }

// samplers are the values of OTEL_TRACES_SAMPLER the SDK applies.
var samplers = []string{"always_on", "always_off", "traceidratio", "parentbased_always_on",
	"parentbased_always_off", "parentbased_traceidratio"}

// ConfigFromEnv reads the OTEL_* variables through getenv. An unknown
// protocol or sampler, or a malformed OTEL_SDK_DISABLED, is an error that
// names the variable and the values it takes.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Endpoint:    firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"),
		Protocol:    firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"),
		ServiceName: strings.TrimSpace(getenv("OTEL_SERVICE_NAME")),
		Sampler:     strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER"))),
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("OTEL_SDK_DISABLED"))); v {
	case "", "false":
	case "true":
		c.Disabled = true
	default:
		return Config{}, fmt.Errorf("OTEL_SDK_DISABLED=%q: use true or false", v)
	}
	if c.ServiceName == "" {
		c.ServiceName = "codexec"
	}
	if c.Protocol == "" {
		c.Protocol = "http/protobuf"
	}
	if c.Protocol != "http/protobuf" {
		return Config{}, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: codexec exports traces over OTLP/HTTP protobuf only; set http/protobuf and point the endpoint at the collector's OTLP/HTTP port (4318 by default)", c.Protocol)
	}
	if c.Sampler != "" && !contains(samplers, c.Sampler) {
		return Config{}, fmt.Errorf("OTEL_TRACES_SAMPLER=%q: use one of %s", c.Sampler, strings.Join(samplers, ", "))
	}
	m, err := metricsFromEnv(getenv)
	if err != nil {
		return Config{}, err
	}
	c.Metrics = m
	return c, nil
}

// metricsFromEnv reads the metric export variables; an exporter other
// than otlp or none, a protocol other than http/protobuf or an interval
// that is not a positive number of milliseconds is an error.
func metricsFromEnv(getenv func(string) string) (MetricsConfig, error) {
	m := MetricsConfig{
		Exporter: strings.ToLower(strings.TrimSpace(getenv("OTEL_METRICS_EXPORTER"))),
		Endpoint: firstSet(getenv, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"),
	}
	switch m.Exporter {
	case "", "otlp", "none":
	case "prometheus":
		return MetricsConfig{}, fmt.Errorf("OTEL_METRICS_EXPORTER=%q: codexec serves Prometheus metrics at /metrics already (HTTP mode); use otlp to export them over OTLP as well, or none", m.Exporter)
	default:
		return MetricsConfig{}, fmt.Errorf("OTEL_METRICS_EXPORTER=%q: use otlp (export over OTLP/HTTP protobuf) or none (no export)", m.Exporter)
	}
	if p := firstSet(getenv, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"); p != "" && p != "http/protobuf" {
		return MetricsConfig{}, fmt.Errorf("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=%q: codexec exports metrics over OTLP/HTTP protobuf only; set http/protobuf and point the endpoint at the collector's OTLP/HTTP port (4318 by default)", p)
	}
	if v := strings.TrimSpace(getenv("OTEL_METRIC_EXPORT_INTERVAL")); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			return MetricsConfig{}, fmt.Errorf("OTEL_METRIC_EXPORT_INTERVAL=%q: give the time between exports in milliseconds, such as 60000", v)
		}
		m.Interval = time.Duration(ms) * time.Millisecond
	}
	return m, nil
}

// firstSet is the first of keys set to a non-blank value, trimmed.
func firstSet(getenv func(string) string, keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
	}
	return ""
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// Shutdown flushes the spans not yet exported and stops the exporter,
// waiting at most until ctx ends.
type Shutdown func(ctx context.Context) error

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
