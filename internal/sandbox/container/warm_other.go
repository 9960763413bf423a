//go:build !linux

package container

import (
	"errors"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/warm"
)

// Off Linux New starts no pool (adaptTo), so warmRequest never asks for a
// warm run and these are never reached; they keep the portable code whole.

// serveWarm runs spec cold: there are no container runners here.
func (c *Backend) serveWarm(spec sandbox.Spec, _ warm.Request) (sandbox.Process, error) {
	return warm.AsProcess(c.startCold(spec))
}

// newRunner fails: a container runner needs Linux (platform.go).
func (c *Backend) newRunner(warm.Request) (warm.Runner, error) {
	return nil, errors.New("warm containers: " + needsLinux)
}
