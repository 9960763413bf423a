package e2e

import (
	"os/exec"
	"sort"
	"testing"
	"time"
)

// BenchmarkSandboxModes measures execute_code python print(1) one-shot
// through the real binary over stdio in namespace mode and in subprocess
// mode, next to a bare `/usr/bin/python3 -c 'print(1)'`, interleaved in the
// same loop, and reports the medians, ratios and the namespace overhead over
// subprocess (target ≤ 10 ms).
//
//	go test ./internal/e2e/ -run '^$' -bench SandboxModes -benchtime 100x
func BenchmarkSandboxModes(b *testing.B) {
	if why := modeAvailable(b, "namespace"); why != "" {
		b.Skipf("namespace mode unavailable: %s", why)
	}
	ns := start(b, "CODEXEC_SANDBOX_MODE=namespace")
	sp := start(b, "CODEXEC_SANDBOX_MODE=subprocess")
	args := map[string]any{"language": "python", "code": "print(1)"}
	for _, s := range []*server{ns, sp} {
		var r execResult
		s.callInto("execute_code", args, &r)
		if r.Stdout != "1\n" {
			b.Fatalf("warm-up run failed: %+v", r)
		}
	}
	timeCall := func(s *server) time.Duration {
		t0 := time.Now()
		if res := s.call("execute_code", args); res.IsError {
			b.Fatal(text(res))
		}
		return time.Since(t0)
	}
	var nsT, spT, bareT []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if out, err := exec.Command("/usr/bin/python3", "-c", "print(1)").Output(); err != nil || string(out) != "1\n" {
			b.Fatalf("bare python: %v %q", err, out)
		}
		bareT = append(bareT, time.Since(t0))
		spT = append(spT, timeCall(sp))
		nsT = append(nsT, timeCall(ns))
	}
	n, s, bare := medianOf(nsT), medianOf(spT), medianOf(bareT)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(n), "namespace-ms")
	b.ReportMetric(ms(s), "subprocess-ms")
	b.ReportMetric(ms(bare), "bare-ms")
	b.ReportMetric(float64(n)/float64(s), "ns/subprocess")
	b.ReportMetric(float64(n)/float64(bare), "ns/bare")
	b.ReportMetric(ms(n-s), "ns-overhead-ms")
}

func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
