package warm

import (
	"sync"
	"time"

	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
)

// quietGate counts the one-shot runs in flight so that background work
// (warm runner refills) can wait for a moment when none is. On a small
// machine a refill started while a run is going (bwrap, namespaces, an
// interpreter's start-up) takes the CPU that run needs to finish: measured
// on 2 cores, a sequential python print(1) took 19 ms end to end with
// refills starting at once and 12 ms with refills held back.
//
// The zero value is not usable; use newQuietGate. Safe for concurrent use.
type quietGate struct {
	mu     sync.Mutex
	active int
	idle   chan struct{} // closed while active == 0
	idleAt time.Time     // when active last became 0
}

func newQuietGate() *quietGate {
	idle := make(chan struct{})
	close(idle)
	return &quietGate{idle: idle, idleAt: time.Now()}
}

// begin records a run starting; every begin needs one end.
func (g *quietGate) begin() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active == 0 {
		g.idle = make(chan struct{})
	}
	g.active++
}

// end records a run ending.
func (g *quietGate) end() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active--
	if g.active == 0 {
		close(g.idle)
		g.idleAt = time.Now()
	}
}

// wait returns once no run is in flight, after at most limit (so steady
// load still gets its refills), or when stop is closed.
func (g *quietGate) wait(limit time.Duration, stop <-chan struct{}) {
	g.mu.Lock()
	idle := g.idle
	g.mu.Unlock()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	case <-stop:
	}
}

// countedProc is a sandbox.Process counted in a quietGate until released.
type countedProc struct {
	sandbox.Process
	end  func()
	once sync.Once
}

// Release releases the run, then counts it as ended.
func (c *countedProc) Release(drainTimeout time.Duration) error {
	defer c.once.Do(c.end)
	return c.Process.Release(drainTimeout)
}

// Path is how the run's sandbox was obtained (sandbox.PathOf).
func (c *countedProc) Path() string { return sandbox.PathOf(c.Process) }

// Read reads the run's counters while it runs (sandbox.Read).
func (c *countedProc) Read(resetPeak bool) (proc.Reading, bool) {
	return sandbox.Read(c.Process, resetPeak)
}

// settle returns once no run has been in flight for quiet, after at most
// limit, or when stop is closed. Runs fired back to back leave gaps of
// about a millisecond between them, which wait takes for the end of the
// load; settle waits for the end of the burst.
func (g *quietGate) settle(quiet, limit time.Duration, stop <-chan struct{}) {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		g.mu.Lock()
		idle, active, left := g.idle, g.active, quiet-time.Since(g.idleAt)
		g.mu.Unlock()
		if active == 0 {
			if left <= 0 {
				return
			}
			// Check again when the quiet would have lasted long enough
			// (a run may begin and end meanwhile).
			idle = nil
		} else {
			left = limit
		}
		t := time.NewTimer(left)
		select {
		case <-deadline.C:
			t.Stop()
			return
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		case <-idle:
			t.Stop()
		}
	}
}
