//go:build !linux

package proc

import (
	"errors"
	"syscall"
)

// NamespaceInit is a program that runs as pid 1 of its own pid namespace;
// pid namespaces are Linux only, so here it is never opened.
type NamespaceInit struct{}

// OpenNamespaceInit fails: no pid namespaces here.
func OpenNamespaceInit(pid int) (*NamespaceInit, error) {
	return nil, errors.New("pid namespaces are Linux only")
}

// Close does nothing.
func (l *NamespaceInit) Close() {}

// Signal does nothing.
func (l *NamespaceInit) Signal(sig syscall.Signal) {}

// ExitSignal returns sig.
func (l *NamespaceInit) ExitSignal(sig syscall.Signal) syscall.Signal { return sig }

// Wrap returns signal.
func (l *NamespaceInit) Wrap(signal func(syscall.Signal) error) func(syscall.Signal) error {
	return signal
}

// Kill does nothing.
func (l *NamespaceInit) Kill() {}

// Pid is 0.
func (l *NamespaceInit) Pid() int { return 0 }
