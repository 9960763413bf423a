//go:build !linux

package container

import (
	"context"
	"errors"
	"time"

	"github.com/codexec/codexec/internal/confine"
	"github.com/codexec/codexec/internal/sandbox"
)

// errUnsupported is why the container backend is unavailable off Linux.
var errUnsupported = errors.New("the docker sandbox mode is built for Linux hosts only")

// Backend is the container backend; off Linux New never returns one.
type Backend struct{}

// New reports that the container backend is unavailable here.
func New(ctx context.Context, o Options) (*Backend, error) { return nil, errUnsupported }

// Name returns "docker".
func (*Backend) Name() string { return "docker" }

// Isolated returns true.
func (*Backend) Isolated() bool { return true }

// User is the unprivileged user programs would run as.
func (*Backend) User() confine.Identity { return confine.As(65534, 65534) }

// Start fails: there is no container backend here.
func (*Backend) Start(context.Context, sandbox.Spec) (sandbox.Process, error) {
	return nil, errUnsupported
}

// Prewarm does nothing.
func (*Backend) Prewarm(sandbox.Spec) {}

// AwaitWarm reports no runner.
func (*Backend) AwaitWarm(string, time.Duration) (sandbox.PoolStat, bool) {
	return sandbox.PoolStat{}, false
}

// PoolStats returns nothing.
func (*Backend) PoolStats() []sandbox.PoolStat { return nil }

// PoolTallies returns nothing.
func (*Backend) PoolTallies() []sandbox.PoolTally { return nil }

// Close does nothing.
func (*Backend) Close() error { return nil }
