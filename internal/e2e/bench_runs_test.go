package e2e

import (
	"slices"
	"testing"
	"time"
)

// BenchmarkRunStatus measures get_run of an ended background run (its
// result and its output from offset 0, read from the blob store) against a
// no-op tool call (list_runs filtered by a status no run has), the two
// interleaved in one loop, through the real binary and the go-sdk client
// over stdio. It reports the p50 of each and their ratio; the target is a
// get_run p50 of at most 1 ms.
//
//	go test ./internal/e2e/ -run '^$' -bench RunStatus -benchtime 2000x
func BenchmarkRunStatus(b *testing.B) {
	s := start(b)
	id := startBackground(b, s.Session, "execute_code", map[string]any{"language": "python", "code": "print('x' * 200)"})
	if v := (&reader{id: id}).untilEnd(b, s.Session, time.Minute); v.Status != "success" {
		b.Fatalf("run: %+v", v)
	}
	status := map[string]any{"execution_id": id, "stdout_offset": 0, "stderr_offset": 0}
	noop := map[string]any{"status": "cancelled"}
	for range 50 { // warm up, and let the result reach the store
		callTool(b, s.Session, "get_run", status)
		callTool(b, s.Session, "list_runs", noop)
	}
	var get, none []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if res := callTool(b, s.Session, "get_run", status); res.IsError {
			b.Fatal(text(res))
		}
		t1 := time.Now()
		if res := callTool(b, s.Session, "list_runs", noop); res.IsError {
			b.Fatal(text(res))
		}
		get, none = append(get, t1.Sub(t0)), append(none, time.Since(t1))
	}
	g, n := p50(get), p50(none)
	b.ReportMetric(float64(g.Microseconds())/1000, "get_run-p50-ms")
	b.ReportMetric(float64(n.Microseconds())/1000, "noop-p50-ms")
	b.ReportMetric(float64(g)/float64(n), "ratio")
}

// p50 is the median of ds.
func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
