package metrics

import "github.com/prometheus/client_golang/prometheus"

// EgressConnections registers codexec_egress_connections_total{decision},
// decision "allowed" or "denied": connections sandboxed code opened
// through the egress proxy since the server started, read by calling
// stats at each scrape. No host names are label values: they are the
// callers' data and would grow the series without bound; a run's audit
// (its result and log entry) names them.
func (m *Metrics) EgressConnections(stats func() (allowed, denied uint64)) {
	if m == nil {
		return
	}
	m.reg.MustRegister(&egressCollector{stats: stats,
		conns: prometheus.NewDesc(Namespace+"_egress_connections_total", "Connections from sandboxed code through the egress proxy, allowed or denied.", []string{"decision"}, nil)})
}

type egressCollector struct {
	stats func() (allowed, denied uint64)
	conns *prometheus.Desc
}

func (c *egressCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.conns }

func (c *egressCollector) Collect(ch chan<- prometheus.Metric) {
	allowed, denied := c.stats()
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.CounterValue, float64(allowed), "allowed")
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.CounterValue, float64(denied), "denied")
}
