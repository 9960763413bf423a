package tracing

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Config
		enabled bool
		metrics bool
		wantErr string
	}{
		{name: "nothing set: off", env: nil,
			want: Config{Protocol: "http/protobuf", ServiceName: "codexec"}},
		{name: "general endpoint: traces and metrics", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
			want: Config{Endpoint: "http://c:4318", Protocol: "http/protobuf", ServiceName: "codexec",
				Metrics: MetricsConfig{Endpoint: "http://c:4318"}}, enabled: true, metrics: true},
		{name: "traces endpoint wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": " http://t:4318/v1/traces "},
			want: Config{Endpoint: "http://t:4318/v1/traces", Protocol: "http/protobuf", ServiceName: "codexec",
				Metrics: MetricsConfig{Endpoint: "http://c:4318"}}, enabled: true, metrics: true},
		{name: "service name and sampler", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
			"OTEL_SERVICE_NAME": "sandbox-eu", "OTEL_TRACES_SAMPLER": "ParentBased_TraceIdRatio"},
			want: Config{Endpoint: "http://c:4318", Protocol: "http/protobuf", ServiceName: "sandbox-eu", Sampler: "parentbased_traceidratio",
				Metrics: MetricsConfig{Endpoint: "http://c:4318"}},
			enabled: true, metrics: true},
		{name: "disabled overrides the endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "TRUE"},
			want: Config{Endpoint: "http://c:4318", Protocol: "http/protobuf", ServiceName: "codexec", Disabled: true,
				Metrics: MetricsConfig{Endpoint: "http://c:4318"}}},
		{name: "metrics exporter otlp alone: metrics to the default endpoint", env: map[string]string{"OTEL_METRICS_EXPORTER": " OTLP "},
			want: Config{Protocol: "http/protobuf", ServiceName: "codexec", Metrics: MetricsConfig{Exporter: "otlp"}}, metrics: true},
		{name: "metrics endpoint alone: metrics only, with the interval", env: map[string]string{
			"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m:4318/v1/metrics", "OTEL_METRIC_EXPORT_INTERVAL": "250"},
			want: Config{Protocol: "http/protobuf", ServiceName: "codexec",
				Metrics: MetricsConfig{Endpoint: "http://m:4318/v1/metrics", Interval: 250 * time.Millisecond}}, metrics: true},
		{name: "metrics exporter none: traces only", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_METRICS_EXPORTER": "none"},
			want: Config{Endpoint: "http://c:4318", Protocol: "http/protobuf", ServiceName: "codexec",
				Metrics: MetricsConfig{Exporter: "none", Endpoint: "http://c:4318"}}, enabled: true},
		{name: "disabled overrides the metrics exporter", env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"},
			want: Config{Protocol: "http/protobuf", ServiceName: "codexec", Disabled: true, Metrics: MetricsConfig{Exporter: "otlp"}}},
		{name: "unknown metrics exporter", env: map[string]string{"OTEL_METRICS_EXPORTER": "otlpp"},
			wantErr: `OTEL_METRICS_EXPORTER="otlpp": use otlp (export over OTLP/HTTP protobuf) or none`},
		{name: "console metrics exporter refused", env: map[string]string{"OTEL_METRICS_EXPORTER": "console"},
			wantErr: `OTEL_METRICS_EXPORTER="console": use otlp`},
		{name: "prometheus metrics exporter points at /metrics", env: map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"},
			wantErr: "serves Prometheus metrics at /metrics already"},
		{name: "metrics over grpc refused", env: map[string]string{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc"}, wantErr: "exports metrics over OTLP/HTTP protobuf only"},
		{name: "interval not a number", env: map[string]string{"OTEL_METRIC_EXPORT_INTERVAL": "10s"}, wantErr: "in milliseconds"},
		{name: "interval zero", env: map[string]string{"OTEL_METRIC_EXPORT_INTERVAL": "0"}, wantErr: "in milliseconds"},
		{name: "explicit http/protobuf", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"},
			want: Config{Protocol: "http/protobuf", ServiceName: "codexec"}},
		{name: "grpc refused", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantErr: "OTLP/HTTP protobuf only"},
		{name: "http/json refused", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, wantErr: "4318"},
		{name: "unknown sampler", env: map[string]string{"OTEL_TRACES_SAMPLER": "sometimes"}, wantErr: "OTEL_TRACES_SAMPLER=\"sometimes\": use one of"},
		{name: "bad disabled", env: map[string]string{"OTEL_SDK_DISABLED": "yes"}, wantErr: "use true or false"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConfigFromEnv(envOf(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("config (-want +got):\n%s", d)
			}
			if got.Enabled() != tc.enabled {
				t.Errorf("Enabled() = %v, want %v", got.Enabled(), tc.enabled)
			}
			if got.MetricsEnabled() != tc.metrics {
				t.Errorf("MetricsEnabled() = %v, want %v", got.MetricsEnabled(), tc.metrics)
			}
		})
	}
}

func TestOffCostsNothing(t *testing.T) {
	shutdown, err := Setup(context.Background(), Config{ServiceName: "codexec"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	ctx := context.Background()
	tr := Tracer("test")
	allocs := testing.AllocsPerRun(1000, func() {
		c, span := Start(ctx, tr, "x")
		if c != ctx {
			t.Fatal("Start changed the context while off")
		}
		End(span, nil)
		_ = TraceID(c)
	})
	if allocs != 0 {
		t.Errorf("a span while tracing is off allocated %v times; want 0", allocs)
	}
}

// BenchmarkStartOff is the cost of a span while tracing is off (the
// default): one atomic load, no allocation.
func BenchmarkStartOff(b *testing.B) {
	ctx, tr := context.Background(), Tracer("bench")
	b.ReportAllocs()
	for b.Loop() {
		_, span := Start(ctx, tr, "x")
		End(span, nil)
	}
}
