//go:build !linux

package container

import (
	"context"
	"errors"

	"github.com/codexec/codexec/internal/sandbox"
)

// errUnsupported is why the container backend is unavailable off Linux.
var errUnsupported = errors.New("the docker sandbox mode is built for Linux hosts only")

// Backend is the container backend; off Linux New never returns one.
type Backend struct{ sandbox.Unavailable }

// New reports that the container backend is unavailable here.
func New(ctx context.Context, o Options) (*Backend, error) { return nil, errUnsupported }
