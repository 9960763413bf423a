package sandbox

import (
	"context"
	"time"

	"github.com/codexec/codexec/internal/confine"
)

// Unavailable stands in for a backend this build cannot offer (the
// isolated modes off Linux): a backend package embeds it in its Backend
// type so callers compile everywhere, while its New returns Err and never a
// Backend. The zero value is valid; every method is safe to call.
type Unavailable struct {
	Mode string // the mode's name, as Name reports it
	Err  error  // why the mode is unavailable, returned by Start
}

// Name returns u.Mode.
func (u Unavailable) Name() string { return u.Mode }

// Isolated returns true: only isolated modes are ever unavailable.
func (Unavailable) Isolated() bool { return true }

// User is the unprivileged user programs would run as.
func (Unavailable) User() confine.Identity { return confine.As(65534, 65534) }

// Start returns u.Err.
func (u Unavailable) Start(ctx context.Context, spec Spec) (Process, error) { return nil, u.Err }

// Prewarm does nothing.
func (Unavailable) Prewarm(Spec) {}

// AwaitWarm reports no runner.
func (Unavailable) AwaitWarm(string, time.Duration) (PoolStat, bool) { return PoolStat{}, false }

// PoolStats returns nothing.
func (Unavailable) PoolStats() []PoolStat { return nil }

// PoolTallies returns nothing.
func (Unavailable) PoolTallies() []PoolTally { return nil }

// Close does nothing.
func (Unavailable) Close() error { return nil }
