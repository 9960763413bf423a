//go:build !linux

package namespace

import (
	"context"
	"errors"
	"time"

	"github.com/codexec/codexec/internal/cgroup"
	"github.com/codexec/codexec/internal/confine"
	"github.com/codexec/codexec/internal/sandbox"
)

// errUnsupported is why the namespace backend is unavailable off Linux: it
// needs Linux namespaces, cgroups, seccomp and Landlock.
var errUnsupported = errors.New("the namespace sandbox needs Linux (namespaces, cgroups, seccomp)")

// Backend is the namespace backend; off Linux New never returns one.
type Backend struct{}

// New reports that the namespace backend is unavailable here.
func New(ctx context.Context, o Options) (*Backend, error) { return nil, errUnsupported }

// Name returns "namespace".
func (*Backend) Name() string { return "namespace" }

// Isolated returns true.
func (*Backend) Isolated() bool { return true }

// User is the unprivileged host user programs would run as.
func (*Backend) User() confine.Identity { return confine.As(65534, 65534) }

// Start fails: there is no namespace backend here.
func (*Backend) Start(context.Context, sandbox.Spec) (sandbox.Process, error) {
	return nil, errUnsupported
}

// CgroupInfo describes no cgroup setup.
func (*Backend) CgroupInfo() cgroup.Info { return cgroup.Info{} }

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
