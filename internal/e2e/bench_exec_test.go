package e2e

import (
	"os/exec"
	"sort"
	"testing"
	"time"
)

// BenchmarkExecutePythonVsBare measures the end-to-end tools/call time of
// execute_code python print(1) through the real binary over stdio, next to a
// bare `/usr/bin/python3 -c 'print(1)'` run in the same loop, and reports the
// medians and their ratio. The sandbox mode is the harness default (set
// CODEXEC_TEST_SANDBOX_MODE to pick one).
//
//	go test ./internal/e2e/ -run '^$' -bench ExecutePythonVsBare -benchtime 100x
func BenchmarkExecutePythonVsBare(b *testing.B) {
	s := start(b)
	args := map[string]any{"language": "python", "code": "print(1)"}
	var r execResult
	s.callInto("execute_code", args, &r) // warm up
	if r.Stdout != "1\n" {
		b.Fatalf("warm-up run failed: %+v", r)
	}
	var mcpTimes, bareTimes []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if out, err := exec.Command("/usr/bin/python3", "-c", "print(1)").Output(); err != nil || string(out) != "1\n" {
			b.Fatalf("bare python: %v %q", err, out)
		}
		t1 := time.Now()
		res := s.call("execute_code", args)
		t2 := time.Now()
		if res.IsError {
			b.Fatal(text(res))
		}
		bareTimes = append(bareTimes, t1.Sub(t0))
		mcpTimes = append(mcpTimes, t2.Sub(t1))
	}
	mcpMed, bareMed := median(mcpTimes), median(bareTimes)
	b.ReportMetric(float64(mcpMed.Microseconds())/1000, "mcp-ms/op")
	b.ReportMetric(float64(bareMed.Microseconds())/1000, "bare-ms/op")
	b.ReportMetric(float64(mcpMed)/float64(bareMed), "ratio")
	b.ReportMetric(float64((mcpMed-bareMed).Microseconds())/1000, "overhead-ms/op")
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
