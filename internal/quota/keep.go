package quota

import (
	"context"
	"sync"
)

// A call's execution slot is released when the call returns, but a
// background run outlives the call that started it and must keep counting
// against its principal's CODEXEC_MAX_CONCURRENT while it runs: it takes
// the call's slot over (Keep), and the run releases it when it ends.

type slotKey struct{}

// slot is one call's execution slot, handed over at most once.
type slot struct {
	mu      sync.Mutex
	release func()
	kept    bool
}

// WithSlot returns ctx carrying the slot that release frees, and the
// function the caller runs when the call returns: it frees the slot unless
// Keep took it over.
func WithSlot(ctx context.Context, release func()) (context.Context, func()) {
	s := &slot{release: release}
	return context.WithValue(ctx, slotKey{}, s), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.kept {
			s.release()
		}
	}
}

// Keep takes over the slot ctx's call holds: it is no longer freed when the
// call returns, and the caller must call the returned function exactly once
// (later calls do nothing) when the work it was kept for ends. A context
// without a slot (no limit configured) gives a function that frees nothing.
func Keep(ctx context.Context) func() {
	s, ok := ctx.Value(slotKey{}).(*slot)
	if !ok {
		return func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kept {
		return func() {}
	}
	s.kept = true
	var once sync.Once
	return func() { once.Do(s.release) }
}
