package scalesim

import (
	"context"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/sessionreg"
)

// Registry operation names, as Counting reports them.
const (
	OpHeartbeat  = "heartbeat"
	OpClaim      = "claim"
	OpOwner      = "owner"
	OpRelease    = "release"
	OpMarkLost   = "mark_lost"
	OpForgetLost = "forget_lost"
	OpExpired    = "expired"
	// OpList is list_sessions and list_contexts on a replica, which the
	// simulated clients do not call.
	OpList = "list"
	// OpPause is a session paused to the shared store (simulated with
	// Config.Checkpoints only, and reported then).
	OpPause = "pause"
)

// Ops lists the registry operations in report order (those every run
// simulates; OpPause follows when checkpoints are simulated).
var Ops = []string{OpHeartbeat, OpExpired, OpClaim, OpOwner, OpRelease, OpMarkLost, OpForgetLost}

// RoundTrips is how many PostgreSQL statements one call of each operation
// costs with the PostgreSQL registry (MarkLost is BEGIN, UPDATE, DELETE,
// COMMIT; a Claim that finds the id taken adds a SELECT, which the
// simulation never provokes since ids are fresh).
var RoundTrips = map[string]int{
	OpHeartbeat: 1, OpClaim: 1, OpOwner: 1, OpRelease: 1, OpMarkLost: 4, OpForgetLost: 1, OpExpired: 1, OpList: 1, OpPause: 1,
}

// Counting passes every call to the registry it wraps and counts the calls
// by operation, so the simulation reports the load the real registry code
// receives. Safe for concurrent use.
type Counting struct {
	Inner sessionreg.Registry

	mu sync.Mutex
	n  map[string]int
}

var _ sessionreg.Registry = (*Counting)(nil)

func (c *Counting) add(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[op]++
}

// Counts returns a copy of the counts so far.
func (c *Counting) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// Heartbeat implements sessionreg.Registry.
func (c *Counting) Heartbeat(ctx context.Context, r sessionreg.Replica, at time.Time) error {
	c.add(OpHeartbeat)
	return c.Inner.Heartbeat(ctx, r, at)
}

// Claim implements sessionreg.Registry.
func (c *Counting) Claim(ctx context.Context, o sessionreg.Owner) error {
	c.add(OpClaim)
	return c.Inner.Claim(ctx, o)
}

// List implements sessionreg.Registry.
func (c *Counting) List(ctx context.Context, prefix string) ([]sessionreg.Owner, error) {
	c.add(OpList)
	return c.Inner.List(ctx, prefix)
}

// Owner implements sessionreg.Registry.
func (c *Counting) Owner(ctx context.Context, id string) (sessionreg.Owner, error) {
	c.add(OpOwner)
	return c.Inner.Owner(ctx, id)
}

// Release implements sessionreg.Registry.
func (c *Counting) Release(ctx context.Context, id, replicaID string) error {
	c.add(OpRelease)
	return c.Inner.Release(ctx, id, replicaID)
}

// Pause implements sessionreg.Registry.
func (c *Counting) Pause(ctx context.Context, id, replicaID string, at time.Time) error {
	c.add(OpPause)
	return c.Inner.Pause(ctx, id, replicaID, at)
}

// MarkLost implements sessionreg.Registry.
func (c *Counting) MarkLost(ctx context.Context, replicaID string, at time.Time) (int, error) {
	c.add(OpMarkLost)
	return c.Inner.MarkLost(ctx, replicaID, at)
}

// ForgetLost implements sessionreg.Registry.
func (c *Counting) ForgetLost(ctx context.Context, before time.Time) (int, error) {
	c.add(OpForgetLost)
	return c.Inner.ForgetLost(ctx, before)
}

// Expired implements sessionreg.Registry.
func (c *Counting) Expired(ctx context.Context, now time.Time, lease time.Duration) ([]sessionreg.Replica, error) {
	c.add(OpExpired)
	return c.Inner.Expired(ctx, now, lease)
}
