//go:build !linux

package namespace

import (
	"context"
	"errors"

	"github.com/codexec/codexec/internal/cgroup"
	"github.com/codexec/codexec/internal/sandbox"
)

// errUnsupported is why the namespace backend is unavailable off Linux: it
// needs Linux namespaces, cgroups, seccomp and Landlock.
var errUnsupported = errors.New("the namespace sandbox needs Linux (namespaces, cgroups, seccomp)")

// Backend is the namespace backend; off Linux New never returns one.
type Backend struct{ sandbox.Unavailable }

// New reports that the namespace backend is unavailable here.
func New(ctx context.Context, o Options) (*Backend, error) { return nil, errUnsupported }

// CgroupInfo describes no cgroup setup.
func (*Backend) CgroupInfo() cgroup.Info { return cgroup.Info{} }
