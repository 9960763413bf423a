package warm

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/sandbox"
)

// fakeStarter starts "runners" that become ready when release is closed.
func fakeStarter(started chan<- struct{}, release <-chan struct{}) Starter {
	return func(Request) (Runner, error) {
		started <- struct{}{}
		<-release
		return &fakeRunner{Stub{Wait: func() error { return nil }}}, nil
	}
}

// fakeRunner is a runner with no process.
type fakeRunner struct{ Stub }

func (*fakeRunner) Destroy() {}

// launchingPool is a pool of up to size fake runners of one kind whose
// first runner is launching: each launch reports on started and finishes
// when release is closed. The pool is closed when the test ends.
func launchingPool(t *testing.T, size int) (*Pool, Request, chan struct{}, chan struct{}) {
	started, release := make(chan struct{}, 8), make(chan struct{})
	p := NewPool(sandbox.PoolOptions{Size: size}, fakeStarter(started, release))
	t.Cleanup(p.Close)
	req := Request{Kind: sandbox.WarmPython, Key: "k"}
	p.Demand(req)
	<-started
	return p, req, started, release
}

// TestTakeWaitsForLaunchingRunner: with no ready runner, a run waits for
// the one launching (a hit); a second run at the same time has nothing to
// wait for and is a miss at once.
func TestTakeWaitsForLaunchingRunner(t *testing.T) {
	p, req, _, release := launchingPool(t, 1)
	first := make(chan Runner)
	go func() { first <- p.Take(req) }()
	waitFor(t, func() bool { return waiters(p, "k") == 1 })
	if r := p.Take(req); r != nil {
		t.Fatal("second run got a runner; only one was launching")
	}
	close(release)
	if r := <-first; r == nil {
		t.Fatal("first run did not get the launching runner")
	}
	st := p.Stats()[0]
	if diff := cmp.Diff([2]uint64{1, 1}, [2]uint64{st.Hits, st.Misses}); diff != "" {
		t.Errorf("hits, misses (-want +got):\n%s", diff)
	}
}

// TestWaitGrowsKind: a run that had to wait for a runner makes the kind
// keep one more, as a miss does.
func TestWaitGrowsKind(t *testing.T) {
	p, req, started, release := launchingPool(t, 2)
	go func() { <-started; close(release) }() // the second launch lets both finish
	if r := p.Take(req); r == nil {
		t.Fatal("run did not get the launching runner")
	}
	if st := p.Stats()[0]; st.Target != 2 {
		t.Errorf("target %d after a waited run, want 2", st.Target)
	}
}

// TestTakeGivesUpWaiting: a launching runner that takes longer than
// missWait leaves the run to start cold, and is kept for a later run.
func TestTakeGivesUpWaiting(t *testing.T) {
	p, req, _, release := launchingPool(t, 1)
	t0 := time.Now()
	if r := p.Take(req); r != nil {
		t.Fatal("got a runner that was never released")
	}
	if d := time.Since(t0); d < missWait {
		t.Errorf("gave up after %v, before missWait", d)
	}
	close(release)
	waitFor(t, func() bool { return p.Stats()[0].Ready == 1 })
	if r := p.Take(req); r == nil {
		t.Fatal("the late runner was not kept")
	}
}

func waiters(p *Pool, key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.kinds[key].waiters)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5 s")
		}
	}
}

// TestBurstGrowsAndShrinks: runs that find no runner ready grow the kind
// past Size up to Burst, so the next burst finds its runners ready; once
// no run found it short for Idle, the kind is back to Size and the extra
// ready runners are stopped.
func TestBurstGrowsAndShrinks(t *testing.T) {
	ready := func(Request) (Runner, error) { return &fakeRunner{Stub{Wait: func() error { return nil }}}, nil }
	p := NewPool(sandbox.PoolOptions{Size: 1, Burst: 3, Idle: time.Hour}, ready)
	t.Cleanup(p.Close)
	req := Request{Kind: sandbox.WarmPython, Key: "k"}
	p.Demand(req)
	waitFor(t, func() bool { return p.Stats()[0].Ready == 1 })
	for range 6 { // faster than the pool refills: some runs find none ready
		p.mu.Lock()
		k := p.kinds["k"]
		k.ready = nil // taken at once, as by runs fired back to back
		p.mu.Unlock()
		_ = p.Take(req)
	}
	waitFor(t, func() bool { st := p.Stats()[0]; return st.Target == 3 && st.Ready == 3 })
	if r := p.Take(req); r == nil {
		t.Fatal("no ready runner after the kind grew")
	}
	p.mu.Lock()
	p.kinds["k"].lastShort = time.Now().Add(-2 * time.Hour)
	p.mu.Unlock()
	waitFor(t, func() bool { return p.Stats()[0].Ready == 3 })
	p.expire(time.Now())
	st := p.Stats()[0]
	if diff := cmp.Diff([2]int{1, 1}, [2]int{st.Target, st.Ready}); diff != "" {
		t.Errorf("target, ready after the burst expired (-want +got):\n%s", diff)
	}
}
