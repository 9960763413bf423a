//go:build notrace

package tracing

import (
	"context"
	"strings"
	"testing"
)

func TestNoExporterBuildRefusesAnEndpoint(t *testing.T) {
	c, err := ConfigFromEnv(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Setup(context.Background(), c, "test")
	if err == nil || !strings.Contains(err.Error(), "built without the trace exporter") {
		t.Fatalf("Setup err = %v, want the no-exporter refusal", err)
	}
	if On() {
		t.Fatal("a refused setup turned tracing on")
	}
	off, err := ConfigFromEnv(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Setup(context.Background(), off, "test"); err != nil {
		t.Fatalf("Setup with OTEL_SDK_DISABLED=true: %v", err)
	}
	metrics, err := ConfigFromEnv(envOf(map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Setup(context.Background(), metrics, "test"); err == nil || !strings.Contains(err.Error(), "OTEL_METRICS_EXPORTER=none") {
		t.Fatalf("Setup with OTEL_METRICS_EXPORTER=otlp: err = %v, want the no-exporter refusal naming OTEL_METRICS_EXPORTER=none", err)
	}
	if MetricsOn() {
		t.Fatal("a refused setup turned metrics on")
	}
}
