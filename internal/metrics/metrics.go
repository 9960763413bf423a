// Package metrics is codexec's Prometheus instrumentation: one registry per
// server, the collectors codexec itself updates (executions, auth failures,
// HTTP requests), and two hooks through which other parts register what they
// own without this package knowing them: GaugeFunc for a value read at scrape
// time (live sessions, warm-pool sizes) and Counter for an event count
// (upstream MCP calls).
//
// Every method is safe for concurrent use and for a nil *Metrics (a no-op),
// so code that runs with metrics off needs no checks.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every codexec metric name.
const Namespace = "codexec"

// Metrics holds the registry and codexec's own collectors. Create with New.
type Metrics struct {
	reg          *prometheus.Registry
	executions   *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	authFailures *prometheus.CounterVec
	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	cost         costMetrics
}

// New returns Metrics with the Go runtime and process collectors registered
// (go_goroutines, process_resident_memory_bytes, …).
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.executions = m.counterVec("executions_total", "Finished executions by language, status and sandbox mode.", "language", "status", "sandbox_mode")
	m.duration = m.histogramVec("execution_duration_seconds", "Wall time of finished executions.",
		[]float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}, "language", "sandbox_mode")
	m.authFailures = m.counterVec("auth_failures_total", "HTTP requests refused for a missing, invalid or expired token.", "reason")
	m.httpRequests = m.counterVec("http_requests_total", "HTTP requests by route, method and status code.", "route", "method", "code")
	m.httpDuration = m.histogramVec("http_request_duration_seconds", "Time to the end of an HTTP response (SSE streams included).",
		prometheus.DefBuckets, "route")
	m.cost = m.newCostMetrics()
	return m
}

func (m *Metrics) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	m.reg.MustRegister(c)
	return c
}

func (m *Metrics) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
	m.reg.MustRegister(h)
	return h
}

// Execution records one finished execution (one-shot or in a session).
func (m *Metrics) Execution(language, status, sandboxMode string, d time.Duration) {
	if m == nil {
		return
	}
	m.executions.WithLabelValues(language, status, sandboxMode).Inc()
	m.duration.WithLabelValues(language, sandboxMode).Observe(d.Seconds())
}

// AuthFailure counts one refused request; reason is a short fixed word
// (missing, invalid, expired, scope).
func (m *Metrics) AuthFailure(reason string) {
	if m == nil {
		return
	}
	m.authFailures.WithLabelValues(reason).Inc()
}

// HTTPRequest records one served request. route must come from a fixed set
// (the mux patterns), never from the raw URL, to bound label cardinality.
func (m *Metrics) HTTPRequest(route, method string, code int, d time.Duration) {
	if m == nil {
		return
	}
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	m.httpDuration.WithLabelValues(route).Observe(d.Seconds())
}

// CounterFunc registers codexec_<name>, a counter read by calling fn at
// each scrape (fn must never decrease), as GaugeFunc does for gauges.
func (m *Metrics) CounterFunc(name, help string, fn func() float64) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, fn))
}

// GaugeFunc registers codexec_<name>, read by calling fn at each scrape. It
// is the hook for values another package owns (live sessions, pool sizes).
// fn must be cheap and safe for concurrent use. Registering a name twice
// panics, as a programming error.
func (m *Metrics) GaugeFunc(name, help string, fn func() float64) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, fn))
}

// Counter registers and returns codexec_<name> with the given labels: the
// hook for event counts another package owns (upstream calls). With a nil
// Metrics it returns an unregistered counter, still usable.
func (m *Metrics) Counter(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	if m != nil {
		m.reg.MustRegister(c)
	}
	return c
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Registry exposes the registry for tests and custom collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }
