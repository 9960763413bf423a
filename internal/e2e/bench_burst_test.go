package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// burstP90 is P1burst: rounds of 10 back-to-back python print(1) calls on
// one server, a pause between rounds (an agent reading the results), and
// the same rounds of bare /usr/bin/python3 -c spawns interleaved with them.
// Returns both p90s in ms over every call of every round (the first round,
// which meets a pool sized for single calls, included) and logs the first
// round's own p90.
func (s *server) burstP90(rounds int, pause time.Duration) (float64, float64) {
	const burst = 10
	var got, base, first []time.Duration
	for r := 0; r < rounds; r++ {
		time.Sleep(pause)
		for i := 0; i < burst; i++ {
			t0 := time.Now()
			if out, err := exec.Command("/usr/bin/python3", "-c", "print(1)").Output(); err != nil || strings.TrimSpace(string(out)) != "1" {
				s.t.Fatalf("bare python: %v %q", err, out)
			}
			base = append(base, time.Since(t0))
		}
		time.Sleep(pause)
		for i := 0; i < burst; i++ {
			t0 := time.Now()
			s.exec1("python", "print(1)")
			got = append(got, time.Since(t0))
			if r == 0 {
				first = append(first, time.Since(t0))
			}
		}
	}
	s.t.Logf("     P1burst first round p90 %.2f ms, max %.2f ms", ms(percentile(first, 90)), ms(percentile(first, 100)))
	return ms(percentile(got, 90)), ms(percentile(base, 90))
}

// BenchmarkCallTargets runs the per-call rows of BenchmarkTargets alone
// (P1n, P1b, P2, P1burst), each next to its baseline, on one server, and
// P1burst0, P1burst on a server whose pool does not grow past
// CODEXEC_POOL_SIZE:
//
//	go test ./internal/e2e/ -run '^$' -bench CallTargets -benchtime 1x
func BenchmarkCallTargets(b *testing.B) {
	for b.Loop() {
		s := start(b)
		mode := s.sandboxMode(s.exec1("python", "print(1)").ExecutionID)
		report := func(name string, got, base float64, unit string) {
			b.Logf("%-4s %-10s %9.2f %s   baseline %9.2f %s   ratio %.3f", name, mode, got, unit, base, unit, got/base)
		}
		if node, err := exec.LookPath("node"); err == nil {
			p, bp := s.oneShotP50(200, 0, "node", "console.log(1)", node, "-e", "console.log(1)")
			report("P1n", p, bp, "ms")
		}
		p, bp := s.bashP50(200)
		report("P1bq", p, bp, "ms")
		p, bp = s.oneShotP50(200, 0, "bash", "echo 1", "/usr/bin/bash", "-c", "echo 1")
		report("P1b", p, bp, "ms")
		p, bp = s.sessionP50(2000)
		report("P2", p, bp, "ms")
		p, bp = s.burstP90(10, time.Second)
		report("P1burst", p, bp, "ms")
		_ = s.Session.Close()
		// The same with the pool held at CODEXEC_POOL_SIZE, as before it
		// grew in bursts.
		f := start(b, "CODEXEC_POOL_BURST=0")
		f.exec1("python", "print(1)")
		p, bp = f.burstP90(10, time.Second)
		report("P1burst0", p, bp, "ms")
		_ = f.Session.Close()
	}
}
