package e2e

import (
	"testing"
	"time"
)

// BenchmarkColdStart measures, per iteration and for both health-check
// timings in the same loop, the time from spawning the server to the answer
// of initialize, and to the first execute_code result (python print(1)):
// "startup" is the old behaviour (the per-language health check runs before
// serving), "background" the default. It reports medians and the
// background/startup ratios.
//
//	go test ./internal/e2e/ -run '^$' -bench ColdStart -benchtime 10x
func BenchmarkColdStart(b *testing.B) {
	times := map[string]map[string][]time.Duration{}
	modes := []string{"startup", "background"}
	for _, m := range modes {
		times[m] = map[string][]time.Duration{}
	}
	for b.Loop() {
		for _, mode := range modes {
			init, first := coldStart(b, mode)
			times[mode]["init"] = append(times[mode]["init"], init)
			times[mode]["first"] = append(times[mode]["first"], first)
		}
	}
	for _, k := range []string{"init", "first"} {
		before, after := median(times["startup"][k]), median(times["background"][k])
		b.ReportMetric(float64(before.Microseconds())/1000, k+"-startup-ms")
		b.ReportMetric(float64(after.Microseconds())/1000, k+"-background-ms")
		b.ReportMetric(float64(after)/float64(before), k+"-ratio")
	}
}

// coldStart spawns a server with the given CODEXEC_HEALTH_CHECK and returns
// the time to initialize and to the first result; the server is stopped.
func coldStart(b *testing.B, mode string) (init, first time.Duration) {
	binary(b) // build outside the timed region
	t0 := time.Now()
	s := start(b, "CODEXEC_HEALTH_CHECK="+mode, "LOG_LEVEL=info")
	init = time.Since(t0)
	var r execResult
	s.callInto("execute_code", map[string]any{"language": "python", "code": "print(1)"}, &r)
	first = time.Since(t0)
	if r.Stdout != "1\n" {
		b.Fatalf("%s: first run failed: %+v", mode, r)
	}
	_ = s.Session.Close()
	_ = s.Cmd.Wait()
	return init, first
}
