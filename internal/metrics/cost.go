package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Cost is what one finished run cost, as its log entry records it: a
// false Known flag or a zero is not measured and is not observed.
type Cost struct {
	// EndReason is why it ended (a closed set: runreport.Reasons).
	EndReason string
	// Sandbox is how the sandbox was obtained (warm, forked, cold).
	Sandbox            string
	CPUUser, CPUSystem time.Duration
	CPUKnown           bool
	MemoryPeakBytes    int64
	WrittenBytes       int64
	NetworkBytes       int64
}

// costMetrics are the collectors of run costs; their labels are closed
// sets (end reasons, sandbox paths, user/system), never ids.
type costMetrics struct {
	ended   *prometheus.CounterVec
	paths   *prometheus.CounterVec
	cpu     *prometheus.CounterVec
	memory  prometheus.Histogram
	written prometheus.Histogram
	network prometheus.Counter
}

func (m *Metrics) newCostMetrics() costMetrics {
	mem := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "execution_memory_peak_bytes",
		Help: "Peak memory of finished runs, where measured.", Buckets: prometheus.ExponentialBuckets(1<<20, 4, 8)})
	written := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "execution_written_bytes",
		Help: "Bytes of the files finished runs created or modified in their working directory.", Buckets: prometheus.ExponentialBuckets(1<<10, 8, 8)})
	network := prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "execution_network_bytes_total",
		Help: "Bytes finished runs sent and received through the egress proxy."})
	m.reg.MustRegister(mem, written, network)
	return costMetrics{
		ended:   m.counterVec("executions_ended_total", "Finished executions by why they ended (exit, signal, oom, timeout, cancelled, disk_full, lost, not_started).", "end_reason"),
		paths:   m.counterVec("executions_by_sandbox_path_total", "Finished executions by how their sandbox was obtained (warm, forked, cold).", "path"),
		cpu:     m.counterVec("execution_cpu_seconds_total", "CPU time of finished runs, where measured, in user mode and in the kernel.", "mode"),
		memory:  mem,
		written: written,
		network: network,
	}
}

// RunCost records what one finished run cost.
func (m *Metrics) RunCost(c Cost) {
	if m == nil {
		return
	}
	if c.EndReason != "" {
		m.cost.ended.WithLabelValues(c.EndReason).Inc()
	}
	if c.Sandbox != "" {
		m.cost.paths.WithLabelValues(c.Sandbox).Inc()
	}
	if c.CPUKnown {
		m.cost.cpu.WithLabelValues("user").Add(c.CPUUser.Seconds())
		m.cost.cpu.WithLabelValues("system").Add(c.CPUSystem.Seconds())
	}
	if c.MemoryPeakBytes > 0 {
		m.cost.memory.Observe(float64(c.MemoryPeakBytes))
	}
	if c.WrittenBytes > 0 {
		m.cost.written.Observe(float64(c.WrittenBytes))
	}
	m.cost.network.Add(float64(c.NetworkBytes))
}
