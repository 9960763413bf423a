// Package quota bounds how much of the server one principal may use at a
// time, so one tenant cannot starve the rest: a Limiter hands out execution
// slots per principal (CODEXEC_MAX_CONCURRENT), and a caller over its limit
// queues for at most the configured wait (CODEXEC_QUEUE_WAIT_MS) before it
// gets ErrBusy.
//
// Limiter is an interface so that a replicated deployment can count slots in
// a shared store; Local counts them in this process.
package quota

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/errcode"
)

// ErrBusy is returned (wrapped, with the limit and the wait) when no slot
// freed up within the wait.
var ErrBusy = errcode.New(errcode.Busy, "busy")

// Limiter hands out execution slots per principal. Acquire blocks until a
// slot is free, the wait expires (ErrBusy) or ctx ends (ctx.Err()); on
// success the caller must call release exactly once.
type Limiter interface {
	Acquire(ctx context.Context, principal string) (release func(), err error)
}

// Local is an in-process Limiter: at most Max concurrent slots per
// principal, waiting at most Wait for one. Create it with NewLocal.
type Local struct {
	max  int
	wait time.Duration
	mu   sync.Mutex
	per  map[string]*slots
}

// slots is one principal's semaphore; users counts holders and waiters so
// the entry is dropped when nobody needs it.
type slots struct {
	sem   chan struct{}
	users int
}

// NewLocal returns a Limiter allowing max concurrent executions per
// principal with a queue wait of wait. max ≤ 0 means unlimited: nil is
// returned, and a nil *Local grants every Acquire at once.
func NewLocal(max int, wait time.Duration) *Local {
	if max <= 0 {
		return nil
	}
	return &Local{max: max, wait: wait, per: map[string]*slots{}}
}

// Acquire implements Limiter. A nil *Local limits nothing.
func (l *Local) Acquire(ctx context.Context, principal string) (func(), error) {
	if l == nil {
		return func() {}, nil
	}
	s := l.enter(principal)
	select {
	case s.sem <- struct{}{}:
		return l.releaser(principal, s), nil
	default:
	}
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case s.sem <- struct{}{}:
		return l.releaser(principal, s), nil
	case <-t.C:
		l.leave(principal, s)
		return nil, fmt.Errorf("%w: %d executions of yours are already running (CODEXEC_MAX_CONCURRENT=%d) and none finished within %v (CODEXEC_QUEUE_WAIT_MS); retry later", ErrBusy, l.max, l.max, l.wait)
	case <-ctx.Done():
		l.leave(principal, s)
		return nil, ctx.Err()
	}
}

// Running is the number of slots principal holds now.
func (l *Local) Running(principal string) int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.per[principal]; s != nil {
		return len(s.sem)
	}
	return 0
}

func (l *Local) enter(principal string) *slots {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.per[principal]
	if s == nil {
		s = &slots{sem: make(chan struct{}, l.max)}
		l.per[principal] = s
	}
	s.users++
	return s
}

func (l *Local) leave(principal string, s *slots) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s.users--
	if s.users == 0 {
		delete(l.per, principal)
	}
}

func (l *Local) releaser(principal string, s *slots) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			<-s.sem
			l.leave(principal, s)
		})
	}
}
