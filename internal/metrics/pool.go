package metrics

import "github.com/prometheus/client_golang/prometheus"

// PoolSample is the state of one kind of warm runner (python, node) at a
// scrape: Ready and Starting runners and the memory the ready ones hold,
// and how many runs were served Warm or Cold since the server started
// (these only grow).
type PoolSample struct {
	Kind            string
	Ready, Starting int
	MemoryBytes     int64
	Warm, Cold      uint64
}

// WarmPool registers codexec_warm_runners{kind,state},
// codexec_warm_runner_memory_bytes{kind} and
// codexec_warm_pool_runs_total{kind,served}, read by calling samples at each
// scrape. samples must be cheap and safe for concurrent use.
func (m *Metrics) WarmPool(samples func() []PoolSample) {
	if m == nil {
		return
	}
	m.reg.MustRegister(&poolCollector{samples: samples,
		runners: prometheus.NewDesc(Namespace+"_warm_runners", "Warm runners by language kind and state (ready, starting).", []string{"kind", "state"}, nil),
		memory:  prometheus.NewDesc(Namespace+"_warm_runner_memory_bytes", "Memory held by the ready warm runners of a kind.", []string{"kind"}, nil),
		runs:    prometheus.NewDesc(Namespace+"_warm_pool_runs_total", "One-shot runs a warm runner could serve, by kind and whether one did (warm) or none was ready (cold).", []string{"kind", "served"}, nil),
	})
}

type poolCollector struct {
	samples               func() []PoolSample
	runners, memory, runs *prometheus.Desc
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.runners
	ch <- c.memory
	ch <- c.runs
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.samples() {
		ch <- prometheus.MustNewConstMetric(c.runners, prometheus.GaugeValue, float64(s.Ready), s.Kind, "ready")
		ch <- prometheus.MustNewConstMetric(c.runners, prometheus.GaugeValue, float64(s.Starting), s.Kind, "starting")
		ch <- prometheus.MustNewConstMetric(c.memory, prometheus.GaugeValue, float64(s.MemoryBytes), s.Kind)
		ch <- prometheus.MustNewConstMetric(c.runs, prometheus.CounterValue, float64(s.Warm), s.Kind, "warm")
		ch <- prometheus.MustNewConstMetric(c.runs, prometheus.CounterValue, float64(s.Cold), s.Kind, "cold")
	}
}
