package session

import (
	"context"
	"crypto/rand"
	"log/slog"
	"sync"
	"time"
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

// spareIdle is how long spares of a language are kept without a pause,
// resume or fork in it.
const spareIdle = 10 * time.Minute

// sparePool holds the ready spares per language.
type sparePool struct {
	mu       sync.Mutex
	ready    map[string][]*Session
	starting map[string]int
	wanted   map[string]time.Time
	closed   bool
}

// startSpares starts the janitor that stops unwanted spares, and spares
// for the languages of the paused sessions a previous server left.
func (m *Manager) startSpares() {
	if m.opts.Checkpoints.Spares <= 0 {
		return
	}
	m.spares.ready, m.spares.starting, m.spares.wanted = map[string][]*Session{}, map[string]int{}, map[string]time.Time{}
	langs := map[string]bool{}
	for _, p := range m.paused {
		langs[p.rec.Language] = true
	}
	for l := range langs {
		m.wantSpare(l)
	}
	go m.spareJanitor()
}

// wantSpare notes demand for lang and starts spares up to the target.
func (m *Manager) wantSpare(lang string) {
	sp := &m.spares
	sp.mu.Lock()
	if sp.ready == nil || sp.closed {
		sp.mu.Unlock()
		return
	}
	sp.wanted[lang] = time.Now()
	n := m.opts.Checkpoints.Spares - len(sp.ready[lang]) - sp.starting[lang]
	sp.starting[lang] += max(n, 0)
	sp.mu.Unlock()
	for range n {
		go m.startSpare(lang)
	}
}

// startSpare starts one spare of lang.
func (m *Manager) startSpare(lang string) {
	k := key{"", "spare-" + rand.Text()[:12]}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := m.launchSpare(ctx, k, lang)
	if err == nil {
		s.execMu.Lock()
		err = s.warmUp(ctx, m.opts.Checkpoints.Timeout, m.opts.KillGrace)
		s.execMu.Unlock()
		if err != nil {
			m.terminate(s)
		}
	}
	sp := &m.spares
	sp.mu.Lock()
	sp.starting[lang]--
	keep := err == nil && !sp.closed
	if keep {
		sp.ready[lang] = append(sp.ready[lang], s)
	}
	sp.mu.Unlock()
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

// takeSpare returns a ready spare of lang (nil: none) and starts its
// replacement.
func (m *Manager) takeSpare(lang string) *Session {
	sp := &m.spares
	sp.mu.Lock()
	var s *Session
	for len(sp.ready[lang]) > 0 && s == nil {
		s = sp.ready[lang][0]
		sp.ready[lang] = sp.ready[lang][1:]
		if s.isDead() {
			go m.terminate(s)
			s = nil
		}
	}
	sp.mu.Unlock()
	m.wantSpare(lang)
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

// stopUnwanted stops the spares of languages not wanted since before.
func (m *Manager) stopUnwanted(before time.Time) {
	sp := &m.spares
	sp.mu.Lock()
	var gone []*Session
	for lang, t := range sp.wanted {
		if t.Before(before) {
			gone = append(gone, sp.ready[lang]...)
			delete(sp.ready, lang)
			delete(sp.wanted, lang)
		}
	}
	sp.mu.Unlock()
	for _, s := range gone {
		m.terminate(s)
	}
}

// closeSpares stops every spare; none start afterwards.
func (m *Manager) closeSpares() {
	sp := &m.spares
	sp.mu.Lock()
	sp.closed = true
	var gone []*Session
	for _, ss := range sp.ready {
		gone = append(gone, ss...)
	}
	sp.ready = map[string][]*Session{}
	sp.mu.Unlock()
	for _, s := range gone {
		m.terminate(s)
	}
}
