package warm

import (
	"fmt"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
)

// Host is the part of a backend that keeps warm runners; each backend
// holds one and forwards AwaitWarm, PoolStats and PoolTallies to it. Each
// backend sets Pool when pools are on (nil keeps none) and parses its own
// Prewarm requests. The zero value has no
// pool; its methods are safe for concurrent use.
type Host struct {
	// Pool is the runner pool; nil keeps none.
	Pool *Pool
	// Cleanups counts background teardowns of taken runners and of runs
	// that reported their status early (NewEarly).
	Cleanups sync.WaitGroup
}

// DestroyLater destroys r in the background, counted in cleanups.
func (h *Host) DestroyLater(r Runner) {
	h.Cleanups.Add(1)
	go func() { defer h.Cleanups.Done(); r.Destroy() }()
}

// Close stops the ready runners and waits for every background teardown.
func (h *Host) Close() {
	h.Pool.Close()
	h.Cleanups.Wait()
}

// AwaitWarm waits up to d for a ready runner of kind (sandbox.WarmPython,
// sandbox.WarmNode, sandbox.WarmBash) and returns its kind's state; false
// if none became ready.
func (h *Host) AwaitWarm(kind string, d time.Duration) (sandbox.PoolStat, bool) {
	return h.Pool.Await(kind, d)
}

// PoolStats returns the state of the warm runners.
func (h *Host) PoolStats() []sandbox.PoolStat { return h.Pool.Stats() }

// PoolTallies returns how many runs of each kind were served warm and cold.
func (h *Host) PoolTallies() []sandbox.PoolTally { return h.Pool.Tallies() }

// FailedHandOver ends p, whose runner died before it took its run (what,
// e.g. "warm runner"), and returns err as the run's failure.
func FailedHandOver(p *proc.HostProc, what string, err error) error {
	_, _ = p.Wait()
	_ = p.Release(time.Second)
	return fmt.Errorf("sandbox: %s: %w", what, err)
}

// AsProcess returns p as a sandbox.Process; a nil p gives a nil interface, not a
// typed nil.
func AsProcess(p *proc.HostProc, err error) (sandbox.Process, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
}
