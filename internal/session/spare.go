package session

import (
	"context"
	"crypto/rand"
	"log/slog"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/driver"
)

// Spare interpreters: a resume or a fork child needs a started
// interpreter in a sandbox of its own, and starting one costs more than
// restoring a small state into it. So, once checkpoints are in use for a
// language, Spares interpreters of it are kept started, each with an empty
// workspace of its own and no owner; a restore takes one (adopt gives it
// the session's id and owner) and a replacement starts in the background.
// A spare never ran anyone's code and serves exactly one session. Spares
// stop after spareIdle without demand. They are not sessions: they count
// against no session limit (like warm runners, CODEXEC_POOL_SIZE).
//
// Two things adapt the pool to what it is asked for:
//   - a fork of n children raises the language's target to n spares (up
//     to MaxFork) until the spares stop for want of demand, so the next
//     fork of that width restores every child at once instead of waiting
//     for n-1 interpreters to start;
//   - python spares fault in, ahead of time, the object memory the largest
//     recent checkpoint of the language will need (its reserve, see
//     reserveFor): loading 10 MB of plain data allocates ~45 MB, and a
//     fresh process spends a third of the load faulting that in. Only the
//     first spare of a language holds a reserve (the resume of the largest
//     session takes it), so fork width costs interpreters,
//     not reserves.

// reserveSlots is how many spares of a language hold a reserve: one, for
// the next resume of the largest session; the others restore fork children
// and smaller sessions, for which faulting in pages costs little.
const reserveSlots = 1

// spareIdle is how long spares of a language are kept without a pause,
// resume or fork in it.
const spareIdle = 10 * time.Minute

// sparePool holds the ready spares per language.
type sparePool struct {
	mu    sync.Mutex
	ready map[string][]*spare
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
	// work counts the starts and reserve growths in flight: Close waits
	// for them, so no spare (and no workspace disk) outlives the server.
	work sync.WaitGroup
}

// spare is a ready spare and the object memory it holds for a restore;
// slot: it is the one of its language that holds a reserve.
type spare struct {
	s       *Session
	reserve reserve
	slot    bool
}

// reserve is the memory a python spare faults in ahead of a restore.
type reserve = driver.Reserve

// startSpares starts the janitor that stops unwanted spares, and spares
// for the languages of the paused sessions a previous server left.
func (m *Manager) startSpares() {
	if m.opts.Checkpoints.Spares <= 0 {
		return
	}
	sp := &m.spares
	sp.ready, sp.starting, sp.reserved = map[string][]*spare{}, map[string]int{}, map[string]int{}
	sp.wanted, sp.target, sp.expect = map[string]time.Time{}, map[string]int{}, map[string]int64{}
	sp.waiters, sp.changed = map[string]int{}, make(chan struct{})
	for _, p := range m.paused {
		m.expectRestore(p.rec.Language, p.rec.Bytes)
	}
	go m.spareJanitor()
}

// wantSpare notes demand for lang and starts spares up to the target.
func (m *Manager) wantSpare(lang string) { m.wantSpares(lang, 0) }

// wantSpares notes demand for lang, raises its target to n spares (within
// MaxFork) and starts spares up to the target.
func (m *Manager) wantSpares(lang string, n int) {
	sp := &m.spares
	sp.mu.Lock()
	if sp.ready == nil || sp.closed {
		sp.mu.Unlock()
		return
	}
	sp.wanted[lang] = time.Now()
	sp.target[lang] = max(sp.target[lang], min(n, m.opts.Checkpoints.MaxFork), m.opts.Checkpoints.Spares)
	add := max(sp.target[lang]-len(sp.ready[lang])-sp.starting[lang], 0)
	slots := make([]bool, add)
	for i := range slots {
		if sp.reserved[lang] < reserveSlots {
			sp.reserved[lang]++
			slots[i] = true
		}
	}
	sp.starting[lang] += add
	sp.work.Add(add)
	sp.mu.Unlock()
	for _, slot := range slots {
		go m.startSpare(lang, slot)
	}
}

// reserveFor is the memory a spare of lang faults in to restore a
// checkpoint of size bytes: none for node (V8 sizes its heap itself); for
// python, object arenas of five times the checkpoint (what plain data
// takes once loaded) and an inbox of its size, together within a quarter
// of the sandbox's memory limit (they count against it until the restore
// releases what it did not use) and 256 MiB.
func (m *Manager) reserveFor(lang string, size int64) reserve {
	if lang != "python" || size <= 0 {
		return reserve{}
	}
	budget := int64(256 << 20)
	if ml := m.opts.Checkpoints.MemoryLimit; ml > 0 {
		budget = min(budget, ml/4)
	}
	return reserve{Objects: min(5*size, budget*5/6), Inbox: min(size, budget/6)}
}

// expectRestore notes that lang's spares may have to restore a checkpoint
// of size bytes: the spares holding a reserve grow it to fit, now.
func (m *Manager) expectRestore(lang string, size int64) {
	sp := &m.spares
	sp.mu.Lock()
	if sp.ready == nil || sp.closed {
		sp.mu.Unlock()
		return
	}
	var grow []*spare
	if size > sp.expect[lang] {
		sp.expect[lang] = size
		for _, e := range sp.ready[lang] {
			if m.toGrow(e, lang) {
				grow = append(grow, e)
			}
		}
	}
	sp.work.Add(len(grow))
	sp.mu.Unlock()
	for _, e := range grow {
		go m.growReserve(e.s, e.reserve)
	}
	m.wantSpare(lang)
}

// toGrow raises e's reserve to what lang's expected checkpoint needs and
// reports whether it has to grow. The caller holds the pool's lock.
func (m *Manager) toGrow(e *spare, lang string) bool {
	want := m.reserveFor(lang, m.spares.expect[lang])
	if !e.slot || (e.reserve.Objects >= want.Objects && e.reserve.Inbox >= want.Inbox) {
		return false
	}
	e.reserve = want
	return true
}

// growReserve has spare s fault in rv. A restore that takes s meanwhile
// waits for it (execMu); a spare that fails is stopped.
// It counts in the pool's work.
func (m *Manager) growReserve(s *Session, rv reserve) {
	defer m.spares.work.Done()
	ctx, cancel := m.untilStop(time.Minute)
	defer cancel()
	s.execMu.Lock()
	err := s.drv.Warm(ctx, rv, m.opts.Checkpoints.Timeout, m.opts.KillGrace)
	s.execMu.Unlock()
	if err != nil {
		slog.Warn("spare interpreter could not grow its reserve", "language", s.Language, "err", err)
		s.kill()
	}
}

// startSpare starts one spare of lang; slot: it holds a reserve for the
// largest checkpoint expected. It counts in the pool's work.
func (m *Manager) startSpare(lang string, slot bool) {
	defer m.spares.work.Done()
	k := key{"", "spare-" + rand.Text()[:12]}
	ctx, cancel := m.untilStop(time.Minute)
	defer cancel()
	var rv reserve
	if slot {
		m.spares.mu.Lock()
		rv = m.reserveFor(lang, m.spares.expect[lang])
		m.spares.mu.Unlock()
	}
	s, err := m.launchSpare(ctx, k, lang)
	if err == nil {
		s.execMu.Lock()
		err = s.drv.Warm(ctx, rv, m.opts.Checkpoints.Timeout, m.opts.KillGrace)
		s.execMu.Unlock()
		if err != nil {
			m.terminate(s)
		}
	}
	sp := &m.spares
	sp.mu.Lock()
	sp.starting[lang]--
	close(sp.changed) // wakes the restores waiting for a spare
	sp.changed = make(chan struct{})
	keep := err == nil && !sp.closed
	e := &spare{s: s, reserve: rv, slot: slot}
	grow := false
	if keep {
		sp.ready[lang] = append(sp.ready[lang], e)
		grow = m.toGrow(e, lang) // a larger checkpoint came meanwhile
	} else if slot {
		sp.reserved[lang]--
	}
	if grow {
		sp.work.Add(1)
	}
	sp.mu.Unlock()
	if grow {
		go m.growReserve(s, e.reserve)
	}
	if err != nil {
		slog.Warn("spare interpreter did not start", "language", lang, "err", err)
	} else if !keep {
		m.terminate(s)
	}
}

// launchSpare launches an interpreter marked as a spare before it runs,
// so that its death is not logged as a session's.
func (m *Manager) launchSpare(ctx context.Context, k key, lang string) (*Session, error) {
	return m.launchWith(ctx, k, lang, StartRequest{Kind: KindSession}, true)
}

// smallRestore: a restore that would want a reserve smaller than this
// takes the spare holding the least. Faulting in that much costs it less
// than giving back a large reserve would, and the reserve stays for the
// large session it was made for.
const smallRestore = 16 << 20

// spareWait bounds how long a restore waits for a spare being started
// before it starts an interpreter of its own.
const spareWait = 5 * time.Second

// takeSpare returns a spare of lang for a checkpoint of size bytes (nil:
// none) and starts its replacement: a ready one, or else the next of
// those being started that no other restore waits for (it started before
// this restore could start its own, so it is ready sooner).
func (m *Manager) takeSpare(ctx context.Context, lang string, size int64) *Session {
	defer m.wantSpare(lang)
	timer := time.NewTimer(spareWait)
	defer timer.Stop()
	sp := &m.spares
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for {
		if s := m.takeReady(lang, size); s != nil || sp.closed || sp.starting[lang] <= sp.waiters[lang] {
			return s
		}
		changed := sp.changed
		sp.waiters[lang]++
		sp.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
		case <-timer.C:
		}
		sp.mu.Lock()
		sp.waiters[lang]--
		if ctx.Err() != nil || !timer.Stop() {
			return nil
		}
		timer.Reset(spareWait)
	}
}

// takeReady takes the ready spare of lang that fits a checkpoint of size
// bytes best (nil: none). The caller holds the pool's lock.
func (m *Manager) takeReady(lang string, size int64) *Session {
	sp := &m.spares
	var s *Session
	for len(sp.ready[lang]) > 0 && s == nil {
		ready := sp.ready[lang]
		need := m.reserveFor(lang, size).Objects
		if need < smallRestore {
			need = 0
		}
		i := bestSpare(ready, need)
		e := ready[i]
		sp.ready[lang] = append(ready[:i:i], ready[i+1:]...)
		if e.slot {
			sp.reserved[lang]--
		}
		if s = e.s; s.isDead() {
			go m.terminate(s)
			s = nil
		}
	}
	return s
}

// bestSpare is the index of the spare whose reserve is the smallest of
// those of at least need bytes, else of the largest.
func bestSpare(ready []*spare, need int64) int {
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

// adopt makes a spare session k: from now on it is that session's
// interpreter (its workspace and package directory keep their names).
func (s *Session) adopt(k key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ID, s.Owner, s.storage, s.spare = k.id, k.owner, storageName(k), false
	s.StartedAt, s.lastActivity = time.Now().UTC(), time.Now()
}

// isSpare reports whether s is a spare nobody adopted.
func (s *Session) isSpare() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spare
}

// spareJanitor stops the spares of languages without recent demand.
func (m *Manager) spareJanitor() {
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
		m.stopUnwanted(time.Now().Add(-spareIdle))
	}
}

// stopUnwanted stops the spares of languages not wanted since before, and
// forgets their fork width and expected checkpoint size.
func (m *Manager) stopUnwanted(before time.Time) {
	sp := &m.spares
	sp.mu.Lock()
	var gone []*spare
	for lang, t := range sp.wanted {
		if t.Before(before) {
			gone = append(gone, sp.ready[lang]...)
			for _, e := range sp.ready[lang] {
				if e.slot {
					sp.reserved[lang]--
				}
			}
			delete(sp.ready, lang)
			delete(sp.wanted, lang)
			delete(sp.target, lang)
			delete(sp.expect, lang)
		}
	}
	sp.mu.Unlock()
	for _, e := range gone {
		m.terminate(e.s)
	}
}

// closeSpares stops every spare; none start afterwards.
func (m *Manager) closeSpares() {
	sp := &m.spares
	sp.mu.Lock()
	sp.closed = true
	if sp.changed != nil {
		close(sp.changed) // no restore waits for a spare any more
		sp.changed = make(chan struct{})
	}
	var gone []*spare
	for _, ss := range sp.ready {
		gone = append(gone, ss...)
	}
	sp.ready = map[string][]*spare{}
	sp.mu.Unlock()
	for _, e := range gone {
		m.terminate(e.s)
	}
	sp.work.Wait() // starts in flight see closed and stop what they made
}

// untilStop is a context that ends after d or when the manager closes.
func (m *Manager) untilStop(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	go func() {
		select {
		case <-m.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
