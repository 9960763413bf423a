//go:build !linux

package container

import (
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
)

// Off Linux New makes no network capture (adaptTo), so a cold run needs no
// gate: it starts its command at once.

// gate is never made here.
type gate struct{}

// gateIfCaptured returns ctCmd as it is: there is no capture to wait for.
func (c *Backend) gateIfCaptured(ctCmd []string) (*gate, []string, []string, error) {
	return nil, ctCmd, nil, nil
}

// close does nothing: there is no gate.
func (*gate) close() {}

// captureCold has nothing to hand over.
func (c *Backend) captureCold(*proc.HostProc, *gate, string, sandbox.Spec) error { return nil }
