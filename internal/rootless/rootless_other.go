//go:build !linux

package rootless

import (
	"context"
	"errors"
)

var errLinux = errors.New("the namespace sandbox needs Linux")

// Probe reports that there is no namespace sandbox on this system.
func Probe(context.Context) error { return errLinux }

// Reexec is not available on this system.
func Reexec([]string) (int, error) { return 0, errLinux }

// ProbeCommand is the hidden command of the Linux probe.
const ProbeCommand = "sandbox-userns-probe"

// RunProbe fails off Linux.
func RunProbe() int { return 1 }
