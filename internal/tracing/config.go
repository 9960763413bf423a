package tracing

import (
	"context"
	"fmt"
	"net/url"
	"strings"
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
}

// Enabled reports whether traces are to be exported.
func (c Config) Enabled() bool { return c.Endpoint != "" && !c.Disabled }

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
	return c, nil
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
