package e2e

import (
	"os"
	"testing"
	"time"
)

// measureRootless logs the Targets rows of the rootless namespace sandbox:
// a server run by a normal account (startRootless) next to the root
// server the other rows measured, both in namespace mode:
//
//	P1r   execute_code python print(1) p50, rootless vs root, interleaved
//	      with a bare /usr/bin/python3 -c spawn (aims: within 1.5× of root,
//	      below the bare spawn)
//	P1rb  the same rootless p50 against that bare spawn
//	P2r   send_to_session x += 1 p50, rootless vs root, interleaved
//	P3r   rootless one-shot python runs/s at concurrency 8 vs bare spawns
//	      (P3rc its machine CPU per run)
//
// Where the rootless sandbox cannot run here, the rows say why instead.
func measureRootless(tb testing.TB, root *server, n targetSizes) {
	if why := rootlessSkipReason(tb); why != "" {
		for _, row := range []string{"P1r", "P1rb", "P2r", "P3r"} {
			tb.Logf("%-4s %-10s skipped: %s", row, "rootless", why)
		}
		return
	}
	r := startRootless(tb)
	defer r.Session.Close()
	if mode := r.sandboxMode(r.exec1("python", "print(1)").ExecutionID); mode != "namespace" {
		tb.Fatalf("the rootless server ran a run in %q mode, want namespace", mode)
	}
	report := func(row string, got, base float64, unit, baseline string) {
		tb.Logf("%-4s %-10s %9.2f %s   baseline %9.2f %s   ratio %.3f   (baseline: %s)",
			row, "rootless", got, unit, base, unit, got/base, baseline)
	}
	p := interleavedP50(n.p1,
		func() { timeBare(tb, "1", "/usr/bin/python3", "-c", "print(1)") },
		func() { root.exec1("python", "print(1)") },
		func() { r.exec1("python", "print(1)") })
	report("P1r", p[2], p[1], "ms", "the root server's namespace run")
	report("P1rb", p[2], p[0], "ms", "bare /usr/bin/python3 -c")
	rootSess, rlSess := root.startSession("python").SessionID, r.startSession("python").SessionID
	p = interleavedP50(n.p2, root.sendIncrement(rootSess), r.sendIncrement(rlSess))
	report("P2r", p[1], p[0], "ms", "the root server's session")
	// The root server's later rows (P4's memory) must not count this session.
	root.call("close_session", map[string]any{"session_id": rootSess})
	got, bare := r.throughput("P3rc", n.p3, 8)
	report("P3r", got, bare, "runs/s", "bare spawns at 8 in flight")
}

// rootlessSkipReason says why the rootless rows cannot run here ("" when
// they can): the test must be root to start a server as another account,
// and that account must be able to run namespace mode.
func rootlessSkipReason(tb testing.TB) string {
	if os.Geteuid() != 0 {
		return "the rows start a server as a normal account, which only a root test process can do"
	}
	return rootlessUnavailable(tb)
}

// interleavedP50 runs each subject once per round, in order, for n rounds,
// and returns each subject's p50 wall time in ms: load on the machine
// weighs on each alike.
func interleavedP50(n int, subjects ...func()) []float64 {
	times := make([][]time.Duration, len(subjects))
	for i := 0; i < n; i++ {
		for j, run := range subjects {
			t0 := time.Now()
			run()
			times[j] = append(times[j], time.Since(t0))
		}
	}
	p50 := make([]float64, len(subjects))
	for j := range times {
		p50[j] = ms(percentile(times[j], 50))
	}
	return p50
}

// sendIncrement returns a call of send_to_session that adds 1 to x in
// session sid, after setting x to 0.
func (s *server) sendIncrement(sid string) func() {
	s.send(sid, "x = 0", nil)
	args := map[string]any{"session_id": sid, "code": "x += 1"}
	return func() {
		if res := s.call("send_to_session", args); res.IsError {
			s.t.Fatal(text(res))
		}
	}
}
