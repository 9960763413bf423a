package scalesim

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/google/go-cmp/cmp"
)

var lostAtSigterm = flag.Bool("lost-at-sigterm", false, "TestScale: a draining replica marks its sessions lost at SIGTERM, not at exit")

// TestScale runs the configuration of docs/scaling.md (10,000 sessions over
// 20 replicas, a rolling update, one node loss) against the in-memory
// registry and checks the invariants. -v prints the table.
func TestScale(t *testing.T) {
	cfg := Default()
	cfg.LostAtSigterm = *lostAtSigterm
	simulate(t, cfg)
}

// checkInvariants asserts what must hold for any configuration.
func checkInvariants(t *testing.T, cfg Config, res Result) {
	t.Helper()
	if len(res.Violations) > 0 {
		t.Fatalf("invariants broken:\n%s", cmp.Diff([]string(nil), res.Violations))
	}
	if res.MaxHops > 1 {
		t.Errorf("a call took %d forwarding hops, want at most 1", res.MaxHops)
	}
	for _, p := range res.Phases {
		failed := 0
		for _, n := range p.Failed {
			failed += n
		}
		if got := p.Succeeded + failed + p.LostTold; got != p.Calls {
			t.Errorf("%s: %d calls, but %d answered + %d failed + %d told lost", p.Name, p.Calls, p.Succeeded, failed, p.LostTold)
		}
		switch p.Name {
		case PhaseWarmup, PhaseSteady, PhaseSettle:
			if p.Lost != 0 || failed != 0 {
				t.Errorf("%s: %d sessions lost, %d calls failed; want none without an event", p.Name, p.Lost, failed)
			}
		case PhaseRolling:
			switch {
			case cfg.Checkpoints && p.Lost != 0:
				t.Errorf("rolling update lost %d sessions: the drained replicas pause theirs", p.Lost)
			case !cfg.Checkpoints && p.Lost == 0:
				t.Errorf("rolling update lost no session: the drained replicas' sessions must be marked lost")
			}
		}
	}
	loss := res.Phase(PhaseNodeLoss)
	if loss.Name == "" {
		t.Fatal("the run ended before the node loss")
	}
	if loss.Lost != res.HeldAtKill || res.HeldAtKill == 0 {
		t.Errorf("node loss: %d sessions marked lost, the killed replica held %d", loss.Lost, res.HeldAtKill)
	}
	if res.Detection <= 0 || res.Detection > res.DetectionBound {
		t.Errorf("node loss detected after %v, want within (0, %v]", res.Detection, res.DetectionBound)
	}
	if n := res.Phase(PhaseSteady).Failed[FailUnreachable]; n != 0 {
		t.Errorf("steady: %d calls found their owner unreachable", n)
	}
}

// TestScaleDeterministic runs a small configuration twice with the same
// seed and expects the same result.
func TestScaleDeterministic(t *testing.T) {
	cfg := small()
	a, err := Run(context.Background(), cfg, &sessionreg.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), cfg, &sessionreg.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("same seed, different results (-first +second):\n%s", d)
	}
	checkInvariants(t, cfg, a)
}

// TestScaleLeaseShorterThanHeartbeat shows the lease check is real: a lease
// shorter than the heartbeat interval expires live replicas.
func TestScaleLeaseShorterThanHeartbeat(t *testing.T) {
	cfg := small()
	cfg.Heartbeat, cfg.Lease = 10*time.Second, 5*time.Second
	res, err := Run(context.Background(), cfg, &sessionreg.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Violations) == 0 {
		t.Fatal("a lease shorter than the heartbeat broke no invariant")
	}
	t.Logf("first violation: %s", res.Violations[0])
}

// small is a configuration of a few hundred sessions over 4 replicas.
func small() Config {
	cfg := Default()
	cfg.Replicas, cfg.Sessions = 4, 200
	cfg.Steady, cfg.Settle, cfg.After = 2*time.Minute, time.Minute, time.Minute
	cfg.Audit = 20 * time.Second
	return cfg
}

// TestScaleLostAtSigterm compares marking a draining replica's sessions lost
// at SIGTERM with marking them at exit: the same sessions are lost, and
// their clients stop retrying refused calls sooner.
func TestScaleLostAtSigterm(t *testing.T) {
	atExit, atSigterm := small(), small()
	atSigterm.LostAtSigterm = true
	a, err := Run(context.Background(), atExit, &sessionreg.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), atSigterm, &sessionreg.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, atSigterm, b)
	ra, rb := a.Phase(PhaseRolling), b.Phase(PhaseRolling)
	if rb.Failed[FailDraining] >= ra.Failed[FailDraining] {
		t.Errorf("refused calls: %d at SIGTERM, %d at exit; want fewer", rb.Failed[FailDraining], ra.Failed[FailDraining])
	}
	t.Logf("rolling update: lost %d vs %d sessions, refused %d vs %d calls (at exit vs at SIGTERM)",
		ra.Lost, rb.Lost, ra.Failed[FailDraining], rb.Failed[FailDraining])
}

// TestScaleCheckpoints runs the configuration of docs/scaling.md with
// shared paused sessions (WithCheckpoints): the invariants hold; idle
// sessions are paused and resumed, most of them on another replica; the
// rolling update loses no session (the drained ones are paused and
// resumed elsewhere); the node loss still loses the killed replica's
// sessions. -v prints the table.
func TestScaleCheckpoints(t *testing.T) {
	cfg := WithCheckpoints()
	res := simulate(t, cfg)
	steady, rolling := res.Phase(PhaseSteady), res.Phase(PhaseRolling)
	if steady.Paused == 0 || steady.Resumed == 0 || steady.ResumedElsewhere*2 < steady.Resumed {
		t.Errorf("steady: %d paused, %d resumed (%d elsewhere); want pauses, resumes, most elsewhere",
			steady.Paused, steady.Resumed, steady.ResumedElsewhere)
	}
	if rolling.PausedAtDrain == 0 || rolling.ResumedElsewhere == 0 {
		t.Errorf("rolling update: %d paused at drain, %d resumed elsewhere", rolling.PausedAtDrain, rolling.ResumedElsewhere)
	}
	if steady.Auto == 0 || res.PeakCheckpointBytes == 0 {
		t.Errorf("no automatic checkpoint or none stored: %d, %d bytes", steady.Auto, res.PeakCheckpointBytes)
	}
}

// simulate runs cfg on an in-memory registry, logs its table and checks
// the invariants every run must keep.
func simulate(t *testing.T, cfg Config) Result {
	t.Helper()
	start := time.Now()
	res, err := Run(context.Background(), cfg, &sessionreg.Memory{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("simulated in %v\n%s", time.Since(start).Round(time.Millisecond), Table(res))
	checkInvariants(t, cfg, res)
	return res
}
