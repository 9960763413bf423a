package session

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/codexec/codexec/internal/driver"
	"github.com/codexec/codexec/internal/spares"
)

// Spare interpreters (internal/spares) are sessions with an empty
// workspace of their own and no owner; a restore takes one and adopt
// gives it the session's id and owner. A spare never ran anyone's code and
// serves exactly one session. They are not sessions: they count against
// no session limit (like warm runners, CODEXEC_POOL_SIZE).

// startSpares opens the spare pool, with spares for the languages of the
// paused sessions a previous server left.
func (m *Manager) startSpares() {
	o := m.opts.Checkpoints
	cfg := spares.Config{Spares: o.Spares, MaxFork: o.MaxFork, MemoryLimit: o.MemoryLimit}
	m.spares.Open(cfg, spares.Callbacks[*Session]{
		Start: m.startSpare,
		Warm:  m.growReserve,
		Stop:  m.terminate,
		Dead:  (*Session).isDead,
	}, m.stop)
	for _, p := range m.paused {
		m.spares.Expect(p.rec.Language, p.rec.Bytes)
	}
}

// startSpare launches a spare of lang and has it fault in rv.
func (m *Manager) startSpare(ctx context.Context, lang string, rv driver.Reserve) (*Session, error) {
	k := key{"", "spare-" + rand.Text()[:12]}
	s, err := m.launchSpare(ctx, k, lang)
	if err != nil {
		return nil, err
	}
	s.execMu.Lock()
	err = s.drv.Warm(ctx, rv, m.opts.Checkpoints.Timeout, m.opts.KillGrace)
	s.execMu.Unlock()
	if err != nil {
		m.terminate(s)
		return nil, err
	}
	return s, nil
}

// growReserve has spare s fault in rv. A restore that takes s meanwhile
// waits for it (execMu); a spare that fails is killed, so that the pool
// drops it.
func (m *Manager) growReserve(ctx context.Context, s *Session, rv driver.Reserve) error {
	s.execMu.Lock()
	err := s.drv.Warm(ctx, rv, m.opts.Checkpoints.Timeout, m.opts.KillGrace)
	s.execMu.Unlock()
	if err != nil {
		s.kill()
	}
	return err
}

// launchSpare launches an interpreter marked as a spare before it runs,
// so that its death is not logged as a session's.
func (m *Manager) launchSpare(ctx context.Context, k key, lang string) (*Session, error) {
	return m.launchWith(ctx, k, lang, StartRequest{Kind: KindSession}, true)
}

// takeSpare returns a spare of lang for a checkpoint of size bytes (nil:
// none) and starts its replacement.
func (m *Manager) takeSpare(ctx context.Context, lang string, size int64) *Session {
	s, _ := m.spares.Take(ctx, lang, size)
	return s
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
