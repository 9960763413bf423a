package cgroup

import (
	"log/slog"
	"sync"
	"syscall"
)

// The v1 freezer keeps a kernel static key that is on while any group is
// frozen. Switching it on or off patches kernel text on every CPU, which
// costs ~1.7 ms per freezer.state write here; with it already on, a write
// costs ~15 µs. Killing a v1 group freezes and thaws it, so every run paid
// two switches. While codexec has groups, it keeps one empty group of its own
// frozen (the pin), so the key stays on and kills stay cheap. The pin is a
// group named "pin" in the server's directory: Sweep treats it like the
// server's other groups.

var pin struct {
	mu   sync.Mutex
	refs int
	dir  string
	// off disables the pin (the benchmark's baseline).
	off bool
}

// acquirePin counts a new v1 group and creates the frozen pin with the first,
// below base in the freezer hierarchy. A pin that cannot be made only costs
// speed.
func acquirePin(base string) {
	pin.mu.Lock()
	defer pin.mu.Unlock()
	pin.refs++
	if pin.refs > 1 || pin.off {
		return
	}
	dir, err := groupDir(base, "pin", false, nil)
	if err != nil {
		slog.Debug("cgroup: freezer pin", "err", err)
		return
	}
	if err := write(dir, "freezer.state", "FROZEN"); err != nil {
		_ = syscall.Rmdir(dir)
		slog.Debug("cgroup: freezer pin", "err", err)
		return
	}
	pin.dir = dir
}

// releasePin uncounts a destroyed v1 group and removes the pin with the last.
func releasePin() {
	pin.mu.Lock()
	defer pin.mu.Unlock()
	pin.refs--
	if pin.refs > 0 || pin.dir == "" {
		return
	}
	_ = syscall.Rmdir(pin.dir) // an empty frozen group can be removed as is
	pin.dir = ""
}
