package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestExposition(t *testing.T) {
	m := New()
	m.Execution("python", "success", "namespace", 120*time.Millisecond)
	m.Execution("python", "success", "namespace", 80*time.Millisecond)
	m.AuthFailure("missing")
	m.HTTPRequest("/mcp", "POST", 200, time.Millisecond)
	m.GaugeFunc("pool_idle", "idle runners", func() float64 { return 3 })
	m.Counter("upstream_calls_total", "upstream calls", "server").WithLabelValues("git").Add(2)
	m.WarmPool(func() []PoolSample {
		return []PoolSample{{Kind: "python", Ready: 2, Starting: 1, MemoryBytes: 9 << 20, Warm: 40, Cold: 3}}
	})
	m.EgressConnections(func() (uint64, uint64) { return 7, 2 })
	out := scrape(t, m)
	for _, want := range []string{
		`codexec_executions_total{language="python",sandbox_mode="namespace",status="success"} 2`,
		`codexec_execution_duration_seconds_count{language="python",sandbox_mode="namespace"} 2`,
		`codexec_auth_failures_total{reason="missing"} 1`,
		`codexec_http_requests_total{code="200",method="POST",route="/mcp"} 1`,
		`codexec_pool_idle 3`,
		`codexec_upstream_calls_total{server="git"} 2`,
		`codexec_warm_runners{kind="python",state="ready"} 2`,
		`codexec_warm_runners{kind="python",state="starting"} 1`,
		`codexec_warm_runner_memory_bytes{kind="python"} 9.437184e+06`,
		`codexec_warm_pool_runs_total{kind="python",served="warm"} 40`,
		`codexec_warm_pool_runs_total{kind="python",served="cold"} 3`,
		`codexec_egress_connections_total{decision="allowed"} 7`,
		`codexec_egress_connections_total{decision="denied"} 2`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
}

func TestNilIsNoop(t *testing.T) {
	var m *Metrics
	m.Execution("bash", "error", "subprocess", time.Second)
	m.AuthFailure("invalid")
	m.HTTPRequest("/mcp", "GET", 401, 0)
	m.GaugeFunc("x", "x", func() float64 { return 0 })
	m.Counter("y_total", "y").WithLabelValues().Inc()
	m.WarmPool(func() []PoolSample { return nil })
	m.EgressConnections(func() (uint64, uint64) { return 0, 0 })
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 404 {
		t.Errorf("nil handler status %d, want 404", rec.Code)
	}
}
