package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

// Paused sessions shared by replicas (CheckpointOptions.Shared): the
// records and checkpoints are in stores every replica reads, and a paused
// session is held by no replica — the registry marks its claim paused
// (Claims.Pause). The replica that pauses a session forgets it; a call for
// it at any replica finds its record (fetchPaused) and resumes it there
// after claiming it (takeClaim), which one replica of those racing wins:
// the others answer ErrHeldElsewhere, and their callers forward the call
// to the winner. So a resume never makes two live copies of a session.

// ErrHeldElsewhere is a paused session another replica claimed (to
// resume or close it) first.
var ErrHeldElsewhere = errors.New("another replica resumed the session meanwhile (retry: the call goes there)")

// shared reports whether paused sessions are shared by replicas.
func (m *Manager) shared() bool {
	return m.checkpoints() && m.opts.Checkpoints.Shared && m.deps.Claims != nil
}

// fetchPaused finds principal owner's session idOrName in the shared
// records when this replica does not have it: a paused session, or one
// another replica holds (with an automatic checkpoint), which takeClaim
// then refuses. The paused session it returns is not kept here (see
// enlist).
func (m *Manager) fetchPaused(ctx context.Context, owner, idOrName string) (*Session, *pausedSession, error) {
	rec, err := m.keeper.Find(ctx, owner, idOrName)
	if errors.Is(err, checkpoint.ErrNoRecord) {
		return nil, nil, fmt.Errorf("%w: %s", ErrNotFound, idOrName)
	}
	if err != nil {
		return nil, nil, err
	}
	return nil, &pausedSession{rec: rec}, nil
}

// enlist makes p, fetched from the shared records, the one paused
// session of its key here while a resume or close of it runs, so that
// concurrent calls here wait for that one (every such operation removes
// it when done: the shared record, not a copy here, is what the next
// call reads). It returns the session live here meanwhile, or the paused
// session to operate on. Not shared, p is returned as it is.
func (m *Manager) enlist(p *pausedSession) (*Session, *pausedSession) {
	if !m.shared() {
		return nil, p
	}
	k := recKey(p.rec)
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.byID[k]; s != nil {
		return s, nil
	}
	if q := m.paused[k]; q != nil {
		return nil, q
	}
	m.paused[k] = p
	return nil, p
}

// delist removes p, shared, when an operation on it ends without
// resuming or closing it.
func (m *Manager) delist(p *pausedSession) {
	if !m.shared() {
		return
	}
	k := recKey(p.rec)
	m.mu.Lock()
	if m.paused[k] == p {
		delete(m.paused, k)
	}
	m.mu.Unlock()
}

// takeClaim claims paused session p (p.mu held) for this replica before
// it is resumed or closed here. When another replica holds it, p is
// forgotten here and the answer is ErrHeldElsewhere.
func (m *Manager) takeClaim(ctx context.Context, p *pausedSession) error {
	if !m.shared() {
		return nil
	}
	rec := p.rec
	k := recKey(rec)
	// Only a paused session (or one this replica holds) is resumed from
	// its record: a record whose session is lost, or was forgotten after
	// that, is an automatic checkpoint of a replica that stopped, which
	// stays lost (docs/checkpoints.md, Replicas).
	switch st, err := m.deps.Claims.Standing(ctx, rec.Owner, rec.ID); {
	case err != nil:
		return fmt.Errorf("resume session %s: %w", rec.ID, err)
	case st == sessionreg.StandingNone:
		p.gone = true
		m.delist(p)
		return fmt.Errorf("%w: %s", ErrNotFound, rec.ID)
	}
	err := m.claim(tenant.With(ctx, rec.Owner), k, rec.Language, StartRequest{Kind: rec.Kind, Name: rec.Name})
	if err == nil {
		return nil
	}
	p.gone, p.elsewhere = true, true
	m.delist(p)
	slog.Debug("paused session held elsewhere", "session_id", rec.ID, "err", err)
	return fmt.Errorf("%w: %s", ErrHeldElsewhere, rec.ID)
}

// retire makes s, whose interpreter stopped, a paused session with
// checkpoint rec, and reports whether s was still the registered one.
// Shared, the registry marks it paused (held by no replica) before this
// replica forgets it: until then a call here finds it live and waits, and
// cannot resume it from its record while the registry still names this
// replica. Not shared, it stays paused here.
func (m *Manager) retire(s *Session, rec Record) bool {
	k := s.key()
	if m.shared() {
		m.sharePausedClaims(k, rec)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID[k] != s {
		return false
	}
	delete(m.byID, k)
	if !m.shared() {
		m.paused[k] = &pausedSession{rec: rec}
	}
	return true
}

// unclaimPaused gives back the claim takeClaim took when the resume
// failed but the checkpoint is still there: the session stays paused for
// any replica.
func (m *Manager) unclaimPaused(k key, p *pausedSession) {
	if !m.shared() {
		return
	}
	m.sharePausedClaims(k, p.rec)
	p.gone = true
	m.delist(p)
}

func (m *Manager) sharePausedClaims(k key, rec Record) {
	m.deps.Claims.Pause(k.owner, k.id)
	if rec.Kind == KindContext && rec.Name != "" && rec.Name != k.id {
		m.deps.Claims.Pause(k.owner, rec.Name)
	}
}

// PauseAll pauses every live session that can be (the drain of a
// replica sharing its paused sessions: another replica resumes them) and
// returns how many it paused and how many it could not. Those keep
// running until Close stops them.
func (m *Manager) PauseAll() (paused, failed int) {
	if !m.checkpoints() {
		return 0, len(m.all())
	}
	for _, s := range m.all() {
		if m.pauseAtShutdown(s) {
			paused++
		} else {
			failed++
		}
	}
	return paused, failed
}
