package e2e

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// metricsEnv turns on metric export only (no traces) to rcv, every 200 ms.
func (r *otlpReceiver) metricsEnv() []string {
	return []string{"OTEL_METRICS_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=" + r.srv.URL + "/v1/metrics",
		"OTEL_METRIC_EXPORT_INTERVAL=200", "OTEL_SERVICE_NAME=codexec-e2e"}
}

// TestMetricsExportHTTP: with OTLP metric export on, a served tools/call
// is one point in mcp.server.operation.duration with the MCP convention's
// attributes (tcp for Streamable HTTP), a call of an unknown tool carries
// its error.type, and the Prometheus metrics of /metrics arrive through
// the bridge (codexec_executions_total counts the run).
func TestMetricsExportHTTP(t *testing.T) {
	sameInEveryMode(t, "metric export is decided at start, before any run")
	rcv := newOTLPReceiver(t)
	s := startHTTP(t, "", append(rcv.metricsEnv(), "CODEXEC_AUTH_TOKENS="+tokenFile(t))...)
	cs := s.mustConnect(aliceToken)
	out := tout(t, cs, "execute_code", map[string]any{"language": "bash", "code": "echo hi"})
	if out["status"] != "success" {
		t.Fatalf("run: %v", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Fatal("calling an unknown tool succeeded")
	}
	rcv.waitMetrics(t, func(ms []*metricspb.Metric) string {
		attrs := operationPoint(ms, "execute_code", "")
		if attrs == nil {
			return "no mcp.server.operation.duration point for tools/call execute_code without error.type"
		}
		if attrs["network.transport"] != "tcp" || attrs["mcp.protocol.version"] == "" {
			return "execute_code point has attributes " + mapString(attrs) + "; want network.transport tcp and mcp.protocol.version"
		}
		if operationPoint(ms, "no_such_tool", "-32602") == nil {
			return "no point for the unknown tool with error.type -32602"
		}
		if executionsCounted(ms) < 1 {
			return "no bridged codexec_executions_total counting the run"
		}
		return ""
	})
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.spans) != 0 {
		t.Errorf("metric export alone exported %d spans; want none", len(rcv.spans))
	}
}

// TestMetricsExportStdio: over stdio the request's duration is exported
// too, with network.transport pipe.
func TestMetricsExportStdio(t *testing.T) {
	sameInEveryMode(t, "metric export is decided at start, before any run")
	rcv := newOTLPReceiver(t)
	s := start(t, rcv.metricsEnv()...)
	var r execResult
	decodeStructured(t, s.call("execute_code", map[string]any{"language": "bash", "code": "echo hi"}), &r)
	if r.Status != "success" {
		t.Fatalf("run: %+v", r)
	}
	rcv.waitMetrics(t, func(ms []*metricspb.Metric) string {
		attrs := operationPoint(ms, "execute_code", "")
		if attrs == nil || attrs["network.transport"] != "pipe" || attrs["mcp.method.name"] != "tools/call" {
			return "no tools/call execute_code point with network.transport pipe; got " + mapString(attrs)
		}
		return ""
	})
}

// waitMetrics polls the received metrics until check returns "", failing
// the test with its last complaint after 20 s.
func (r *otlpReceiver) waitMetrics(t *testing.T, check func([]*metricspb.Metric) string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r.mu.Lock()
		ms, bad := slices.Clone(r.metrics), slices.Clone(r.bad)
		r.mu.Unlock()
		why := check(ms)
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: %s (%d metrics received; refused requests: %v)", why, len(ms), bad)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// operationPoint is the attributes of the last mcp.server.operation.duration
// point of tools/call tool with error.type errType ("" for none), after
// checking it is a histogram in seconds with a count; nil when there is none.
func operationPoint(ms []*metricspb.Metric, tool, errType string) map[string]string {
	var found map[string]string
	for _, m := range ms {
		if m.Name != "mcp.server.operation.duration" || m.Unit != "s" || m.GetHistogram() == nil {
			continue
		}
		for _, dp := range m.GetHistogram().DataPoints {
			attrs := map[string]string{}
			for _, kv := range dp.Attributes {
				attrs[kv.Key] = kv.Value.GetStringValue()
			}
			if dp.Count > 0 && attrs["gen_ai.tool.name"] == tool && attrs["error.type"] == errType {
				found = attrs
			}
		}
	}
	return found
}

// executionsCounted is the highest value of codexec_executions_total
// received (summed over its series), 0 when none arrived.
func executionsCounted(ms []*metricspb.Metric) float64 {
	best := 0.0
	for _, m := range ms {
		if m.Name != "codexec_executions_total" || m.GetSum() == nil {
			continue
		}
		total := 0.0
		for _, dp := range m.GetSum().DataPoints {
			total += dp.GetAsDouble()
		}
		best = max(best, total)
	}
	return best
}

// mapString shows attrs in a failure message.
func mapString(attrs map[string]string) string {
	if attrs == nil {
		return "nothing"
	}
	out := ""
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		out += k + "=" + attrs[k] + " "
	}
	return out
}

// TestMetricsBadExporterRefusesStart: a misspelt OTEL_METRICS_EXPORTER
// stops the server at start with the values it takes, instead of serving
// with no metrics exported.
func TestMetricsBadExporterRefusesStart(t *testing.T) {
	sameInEveryMode(t, "configuration is checked before any run")
	cmd := exec.Command(binary(t), "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CODEXEC_DATA_DIR=" + t.TempDir(), "CODEXEC_SANDBOX_MODE=subprocess",
		"OTEL_METRICS_EXPORTER=otel"}
	cmd.Stdin = strings.NewReader("")
	b, err := cmd.CombinedOutput()
	if out := string(b); err == nil || !strings.Contains(out, `OTEL_METRICS_EXPORTER="otel": use otlp`) {
		t.Fatalf("err %v, output %q: want a configuration error naming OTEL_METRICS_EXPORTER and its values", err, out)
	}
}
