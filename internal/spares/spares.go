// Package spares keeps started interpreters ready, per language, for
// restores and forks: a resume or a fork child needs a started interpreter
// in a sandbox of its own, and starting one costs more than restoring a
// small state into it. So, once checkpoints are in use for a language,
// Config.Spares interpreters of it are kept started; a restore takes one
// and a replacement starts in the background. Spares stop after Idle
// without demand.
//
// Two things adapt the pool to what it is asked for:
//   - a fork of n children raises the language's target to n spares (up
//     to Config.MaxFork) until the spares stop for want of demand, so the
//     next fork of that width restores every child at once instead of
//     waiting for n-1 interpreters to start;
//   - python spares fault in, ahead of time, the object memory the largest
//     recent checkpoint of the language will need (its reserve, see
//     ReserveFor): loading 10 MB of plain data allocates ~45 MB, and a
//     fresh process spends a third of the load faulting that in. Only the
//     first spare of a language holds a reserve (the resume of the largest
//     session takes it), so fork width costs interpreters, not reserves.
//
// Contract: the zero Pool is disabled (every method is a no-op, Take
// returns none) until Open. The pool owns the spares it holds: it stops
// them through Callbacks.Stop when they are no longer wanted or at Close;
// a spare returned by Take is the caller's. All methods are safe for
// concurrent use; callbacks run without the pool's lock held.
package spares

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/driver"
)

// reserveSlots is how many spares of a language hold a reserve: one, for
// the next resume of the largest session; the others restore fork children
// and smaller sessions, for which faulting in pages costs little.
const reserveSlots = 1

// Idle is how long spares of a language are kept without a pause,
// resume or fork in it.
const Idle = 10 * time.Minute

// smallRestore: a restore that would want a reserve smaller than this
// takes the spare holding the least. Faulting in that much costs it less
// than giving back a large reserve would, and the reserve stays for the
// large session it was made for.
const smallRestore = 16 << 20

// spareWait bounds how long a restore waits for a spare being started
// before it starts an interpreter of its own.
const spareWait = 5 * time.Second

// Config sizes a Pool.
type Config struct {
	// Spares is the number of spares kept per language in use (> 0).
	Spares int
	// MaxFork bounds the target a fork can raise a language's pool to.
	MaxFork int
	// MemoryLimit is a sandbox's memory limit in bytes (0: none); a
	// reserve stays within a quarter of it.
	MemoryLimit int64
}

// Callbacks are how a Pool starts, warms and stops interpreters of type T.
type Callbacks[T any] struct {
	// Start starts a spare of lang faulting in rv; on error it leaves
	// nothing behind.
	Start func(ctx context.Context, lang string, rv driver.Reserve) (T, error)
	// Warm has a ready spare grow its reserve to rv. On error it leaves
	// the spare dead, so that Take drops it.
	Warm func(ctx context.Context, s T, rv driver.Reserve) error
	// Stop stops a spare and frees what it holds.
	Stop func(s T)
	// Dead reports whether a spare's interpreter has died.
	Dead func(s T) bool
}

// Pool holds the ready spares per language. See the package comment for
// its contract.
type Pool[T any] struct {
	cfg   Config
	cb    Callbacks[T]
	mu    sync.Mutex
	ready map[string][]*spare[T]
	// starting counts the spares being started; reserved those, ready or
	// starting, that hold a reserve.
	starting, reserved map[string]int
	wanted             map[string]time.Time
	// waiters counts the restores waiting for a spare being started;
	// changed is closed (and replaced) whenever a start ends.
	waiters map[string]int
	changed chan struct{}
	// target is the number of spares wanted (Spares, or the width of the
	// latest fork); expect the size of the largest checkpoint the
	// language's spares should be ready to restore.
	target map[string]int
	expect map[string]int64
	closed bool
	// work counts the starts, reserve growths and stops in flight; Close
	// cancels (through stop) and waits for them, so no spare, nor its
	// workspace disk, outlives the pool.
	work sync.WaitGroup
	stop <-chan struct{}
}

// spare is a ready spare and the object memory it holds for a restore;
// slot: it is the one of its language that holds a reserve.
type spare[T any] struct {
	s       T
	reserve driver.Reserve
	slot    bool
}

// Open enables p with cfg and cb and starts the janitor that stops the
// spares of languages without demand until stop is closed. It does nothing
// when cfg.Spares <= 0. Call it once, before any other method.
func (p *Pool[T]) Open(cfg Config, cb Callbacks[T], stop <-chan struct{}) {
	if cfg.Spares <= 0 {
		return
	}
	p.mu.Lock()
	p.cfg, p.cb = cfg, cb
	p.ready, p.starting, p.reserved = map[string][]*spare[T]{}, map[string]int{}, map[string]int{}
	p.wanted, p.target, p.expect = map[string]time.Time{}, map[string]int{}, map[string]int64{}
	p.waiters, p.changed = map[string]int{}, make(chan struct{})
	p.stop = stop
	p.mu.Unlock()
	go p.janitor(stop)
}

// Want notes demand for lang and starts spares up to the target.
func (p *Pool[T]) Want(lang string) { p.WantN(lang, 0) }

// WantN notes demand for lang, raises its target to n spares (within
// MaxFork) and starts spares up to the target.
func (p *Pool[T]) WantN(lang string, n int) {
	p.mu.Lock()
	if p.ready == nil || p.closed {
		p.mu.Unlock()
		return
	}
	p.wanted[lang] = time.Now()
	p.target[lang] = max(p.target[lang], min(n, p.cfg.MaxFork), p.cfg.Spares)
	add := max(p.target[lang]-len(p.ready[lang])-p.starting[lang], 0)
	slots := make([]bool, add)
	for i := range slots {
		if p.reserved[lang] < reserveSlots {
			p.reserved[lang]++
			slots[i] = true
		}
	}
	p.starting[lang] += add
	p.work.Add(add)
	p.mu.Unlock()
	for _, slot := range slots {
		go p.start(lang, slot)
	}
}

// ReserveFor is the memory a spare of lang faults in to restore a
// checkpoint of size bytes within a sandbox memory limit of memoryLimit
// (0: none): none for node (V8 sizes its heap itself); for python, object
// arenas of five times the checkpoint (what plain data takes once loaded)
// and an inbox of its size, together within a quarter of the memory limit
// (they count against it until the restore releases what it did not use)
// and 256 MiB.
func ReserveFor(lang string, size, memoryLimit int64) driver.Reserve {
	if lang != "python" || size <= 0 {
		return driver.Reserve{}
	}
	budget := int64(256 << 20)
	if memoryLimit > 0 {
		budget = min(budget, memoryLimit/4)
	}
	return driver.Reserve{Objects: min(5*size, budget*5/6), Inbox: min(size, budget/6)}
}

// reserveFor is ReserveFor within p's memory limit.
func (p *Pool[T]) reserveFor(lang string, size int64) driver.Reserve {
	return ReserveFor(lang, size, p.cfg.MemoryLimit)
}

// Expect notes that lang's spares may have to restore a checkpoint of
// size bytes: the spares holding a reserve grow it to fit, now.
func (p *Pool[T]) Expect(lang string, size int64) {
	p.mu.Lock()
	if p.ready == nil || p.closed {
		p.mu.Unlock()
		return
	}
	var grow []*spare[T]
	if size > p.expect[lang] {
		p.expect[lang] = size
		for _, e := range p.ready[lang] {
			if p.toGrow(e, lang) {
				grow = append(grow, e)
			}
		}
	}
	p.work.Add(len(grow))
	p.mu.Unlock()
	for _, e := range grow {
		go p.grow(lang, e.s, e.reserve)
	}
	p.Want(lang)
}

// toGrow raises e's reserve to what lang's expected checkpoint needs and
// reports whether it has to grow. The caller holds p.mu.
func (p *Pool[T]) toGrow(e *spare[T], lang string) bool {
	want := p.reserveFor(lang, p.expect[lang])
	if !e.slot || (e.reserve.Objects >= want.Objects && e.reserve.Inbox >= want.Inbox) {
		return false
	}
	e.reserve = want
	return true
}

// grow has spare s of lang fault in rv; Warm leaves a spare that fails
// dead, for Take to drop.
// It counts in p.work.
func (p *Pool[T]) grow(lang string, s T, rv driver.Reserve) {
	defer p.work.Done()
	ctx, cancel := p.untilStop(time.Minute)
	defer cancel()
	if err := p.cb.Warm(ctx, s, rv); err != nil {
		slog.Warn("spare interpreter could not grow its reserve", "language", lang, "err", err)
	}
}

// start starts one spare of lang; slot: it holds a reserve for the
// largest checkpoint expected. It counts in p.work.
func (p *Pool[T]) start(lang string, slot bool) {
	defer p.work.Done()
	ctx, cancel := p.untilStop(time.Minute)
	defer cancel()
	var rv driver.Reserve
	if slot {
		p.mu.Lock()
		rv = p.reserveFor(lang, p.expect[lang])
		p.mu.Unlock()
	}
	s, err := p.cb.Start(ctx, lang, rv)
	p.mu.Lock()
	p.starting[lang]--
	close(p.changed) // wakes the restores waiting for a spare
	p.changed = make(chan struct{})
	keep := err == nil && !p.closed
	e := &spare[T]{s: s, reserve: rv, slot: slot}
	grow := false
	if keep {
		p.ready[lang] = append(p.ready[lang], e)
		grow = p.toGrow(e, lang) // a larger checkpoint came meanwhile
	} else if slot {
		p.reserved[lang]--
	}
	if grow {
		p.work.Add(1)
	}
	p.mu.Unlock()
	if grow {
		go p.grow(lang, s, e.reserve)
	}
	if err != nil {
		slog.Warn("spare interpreter did not start", "language", lang, "err", err)
	} else if !keep {
		p.cb.Stop(s)
	}
}

// Take returns a spare of lang for a checkpoint of size bytes (ok false:
// none) and starts its replacement: a ready one, or else the next of
// those being started that no other restore waits for (it started before
// this restore could start its own, so it is ready sooner).
func (p *Pool[T]) Take(ctx context.Context, lang string, size int64) (s T, ok bool) {
	defer p.Want(lang)
	timer := time.NewTimer(spareWait)
	defer timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if s, ok = p.takeReady(lang, size); ok || p.closed || p.starting[lang] <= p.waiters[lang] {
			return s, ok
		}
		changed := p.changed
		p.waiters[lang]++
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
		case <-timer.C:
		}
		p.mu.Lock()
		p.waiters[lang]--
		if ctx.Err() != nil || !timer.Stop() {
			return s, false
		}
		timer.Reset(spareWait)
	}
}

// takeReady takes the live ready spare of lang that fits a checkpoint of
// size bytes best (ok false: none), stopping the dead ones it meets. The
// caller holds p.mu.
func (p *Pool[T]) takeReady(lang string, size int64) (s T, ok bool) {
	for len(p.ready[lang]) > 0 {
		ready := p.ready[lang]
		need := p.reserveFor(lang, size).Objects
		if need < smallRestore {
			need = 0
		}
		i := bestSpare(ready, need)
		e := ready[i]
		p.ready[lang] = append(ready[:i:i], ready[i+1:]...)
		if e.slot {
			p.reserved[lang]--
		}
		if !p.cb.Dead(e.s) {
			return e.s, true
		}
		p.work.Add(1)
		go func() { defer p.work.Done(); p.cb.Stop(e.s) }()
	}
	return s, false
}

// bestSpare is the index of the spare whose reserve is the smallest of
// those of at least need bytes, else of the largest.
func bestSpare[T any](ready []*spare[T], need int64) int {
	best := 0
	for i, e := range ready {
		r, b := e.reserve.Objects, ready[best].reserve.Objects
		fits, bestFits := r >= need, b >= need
		if (fits && (!bestFits || r < b)) || (!fits && !bestFits && r > b) {
			best = i
		}
	}
	return best
}

// Ready is, for each ready spare of lang, the reserve it holds and whether
// it is the one holding the reserve slot; done reports that none is being
// started. It lets callers wait for the pool to settle.
func (p *Pool[T]) Ready(lang string) (reserves []driver.Reserve, slots []bool, done bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.ready[lang] {
		reserves, slots = append(reserves, e.reserve), append(slots, e.slot)
	}
	return reserves, slots, p.starting[lang] == 0
}

// janitor stops the spares of languages without recent demand until stop
// is closed.
func (p *Pool[T]) janitor(stop <-chan struct{}) {
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		p.stopUnwanted(time.Now().Add(-Idle))
	}
}

// stopUnwanted stops the spares of languages not wanted since before, and
// forgets their fork width and expected checkpoint size.
func (p *Pool[T]) stopUnwanted(before time.Time) {
	p.mu.Lock()
	if p.closed { // Close stops them all and may be waiting on work
		p.mu.Unlock()
		return
	}
	var gone []*spare[T]
	for lang, t := range p.wanted {
		if t.Before(before) {
			gone = append(gone, p.ready[lang]...)
			for _, e := range p.ready[lang] {
				if e.slot {
					p.reserved[lang]--
				}
			}
			delete(p.ready, lang)
			delete(p.wanted, lang)
			delete(p.target, lang)
			delete(p.expect, lang)
		}
	}
	p.work.Add(1)
	p.mu.Unlock()
	defer p.work.Done()
	for _, e := range gone {
		p.cb.Stop(e.s)
	}
}

// Close stops every spare; none start afterwards.
func (p *Pool[T]) Close() {
	p.mu.Lock()
	p.closed = true
	if p.changed != nil {
		close(p.changed) // no restore waits for a spare any more
		p.changed = make(chan struct{})
	}
	var gone []*spare[T]
	for _, ss := range p.ready {
		gone = append(gone, ss...)
	}
	p.ready = map[string][]*spare[T]{}
	p.mu.Unlock()
	for _, e := range gone {
		p.cb.Stop(e.s)
	}
	p.work.Wait() // starts in flight see closed and stop what they made
}

// untilStop is a context that ends after d or when the pool's stop
// channel closes.
func (p *Pool[T]) untilStop(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-p.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
