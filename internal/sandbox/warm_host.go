package sandbox

import (
	"fmt"
	"github.com/codexec/codexec/internal/proc"
	"sync"
	"time"
)

// warmHost is the part of a backend that keeps warm runners; Namespace,
// Container and Subprocess embed it, and it gives them AwaitWarm,
// PoolStats and PoolTallies. Each backend sets warm when pools are on (nil
// keeps none) and parses its own Prewarm requests. The zero value has no
// pool; its methods are safe for concurrent use.
type warmHost struct {
	warm *warmPool
	// cleanups counts background teardowns of taken runners and of runs
	// that reported their status early (newEarly).
	cleanups sync.WaitGroup
}

// destroyLater destroys r in the background, counted in cleanups.
func (h *warmHost) destroyLater(r warmRunner) {
	h.cleanups.Add(1)
	go func() { defer h.cleanups.Done(); r.destroy() }()
}

// closeWarm stops the ready runners and waits for every background
// teardown.
func (h *warmHost) closeWarm() {
	h.warm.close()
	h.cleanups.Wait()
}

// AwaitWarm waits up to d for a ready runner of kind (WarmPython,
// WarmNode) and returns its kind's state; false if none became ready.
func (h *warmHost) AwaitWarm(kind string, d time.Duration) (PoolStat, bool) {
	return h.warm.await(kind, d)
}

// PoolStats returns the state of the warm runners.
func (h *warmHost) PoolStats() []PoolStat { return h.warm.stats() }

// PoolTallies returns how many runs of each kind were served warm and cold.
func (h *warmHost) PoolTallies() []PoolTally { return h.warm.tallies() }

// failedHandOver ends p, whose runner died before it took its run (what,
// e.g. "warm runner"), and returns err as the run's failure.
func failedHandOver(p *proc.HostProc, what string, err error) error {
	_, _ = p.Wait()
	_ = p.Release(time.Second)
	return fmt.Errorf("sandbox: %s: %w", what, err)
}

// asProcess returns p as a Process; a nil p gives a nil interface, not a
// typed nil.
func asProcess(p *proc.HostProc, err error) (Process, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
}
