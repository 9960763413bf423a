package session

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/tenant"
)

// Automatic checkpoints: a quiet period after each run of a live session,
// its state is checkpointed, so that a server killed outright (kill -9)
// resumes it from there. Bounded in cost: a session that has not run since
// its last checkpoint is not checkpointed again, one whose state was over
// the limit is tried again only after it ran, and after a checkpoint that
// took longer than AutoMaxCost the next waits twenty times as long.

// scheduleAuto (re)arms s's automatic checkpoint after a run.
func (m *Manager) scheduleAuto(s *Session) {
	quiet := m.opts.Checkpoints.Auto
	if !m.checkpoints() || quiet <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.autoTimer != nil {
		s.autoTimer.Reset(quiet)
		return
	}
	s.autoTimer = time.AfterFunc(quiet, func() { m.autoCheckpoint(s) })
}

// stopAuto disarms s's automatic checkpoint.
func (s *Session) stopAuto() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.autoTimer != nil {
		s.autoTimer.Stop()
	}
}

// autoCheckpoint checkpoints s unless it runs code now, has not run
// since its last checkpoint or is held back.
func (m *Manager) autoCheckpoint(s *Session) {
	if !m.registered(s) || !s.execMu.TryLock() {
		return // closed, or running: its run re-arms the timer
	}
	defer s.execMu.Unlock()
	s.mu.Lock()
	hold := s.autoHold
	s.mu.Unlock()
	if s.isDead() || s.unchanged() || time.Now().Before(hold) || !m.registered(s) {
		return
	}
	t0 := time.Now()
	_, err := m.snapshot(tenant.With(context.Background(), s.Owner), s, true)
	took := time.Since(t0)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case errors.Is(err, ErrStateTooBig):
		s.ckExecs = s.executions // try again once it has run
		slog.Info("automatic checkpoint skipped: state over the limit", "session_id", s.ID)
	case err != nil:
		slog.Warn("automatic checkpoint failed", "session_id", s.ID, "err", err)
	case took > m.opts.Checkpoints.AutoMaxCost:
		s.autoHold = time.Now().Add(20 * took)
		slog.Info("automatic checkpoint was slow: holding the next back", "session_id", s.ID, "took", took)
	default:
		slog.Debug("automatic checkpoint", "session_id", s.ID, "took", took)
	}
}

// unchanged reports whether s has not run code since its current
// checkpoint.
func (s *Session) unchanged() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ckpt != nil && s.ckExecs == s.executions
}

// currentRecord is s's current checkpoint (nil: none).
func (s *Session) currentRecord() *Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ckpt
}

// forgetCheckpoint removes a closed session's record and checkpoint.
func (m *Manager) forgetCheckpoint(s *Session) {
	s.stopAuto()
	if rec := s.currentRecord(); rec != nil {
		m.forget(s.key(), rec.Blob)
	}
}

// idle pauses (or, with IdleClose or without checkpoints, closes) a
// session that was idle for the idle timeout. A pause that fails closes it.
func (m *Manager) idle(s *Session) {
	if !m.checkpoints() || m.opts.Checkpoints.IdleClose {
		slog.Info("closing idle session", "session_id", s.ID, "owner", s.Owner)
		m.stopSession(s, "idle_timeout", true)
		return
	}
	s.execMu.Lock()
	_, err := m.pauseLocked(tenant.With(context.Background(), s.Owner), s, "idle_timeout")
	s.execMu.Unlock()
	if err == nil {
		slog.Info("paused idle session", "session_id", s.ID, "owner", s.Owner)
		return
	}
	slog.Warn("idle session could not be paused: closing it", "session_id", s.ID, "err", err)
	m.stopSession(s, "idle_timeout", true)
}

// pauseAtShutdown pauses s as the server stops; false when it could not
// (it runs code, is dead, or its state cannot be checkpointed).
func (m *Manager) pauseAtShutdown(s *Session) bool {
	if !s.execMu.TryLock() {
		return false
	}
	defer s.execMu.Unlock()
	if s.isDead() {
		return false
	}
	_, err := m.pauseLocked(tenant.With(context.Background(), s.Owner), s, "server_shutdown")
	if err != nil {
		slog.Warn("session not paused at shutdown: its state is lost", "session_id", s.ID, "err", err)
		return false
	}
	return true
}

// pausedInfos lists owner's paused sessions.
func (m *Manager) pausedInfos(owner string) []Info {
	if m.shared() {
		return nil // the registry lists them, once, whichever replica paused them
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Info
	for k, p := range m.paused {
		if k.owner == owner {
			out = append(out, p.info())
		}
	}
	return out
}

// pausedNameTaken refuses a new context whose name a paused context of
// the same principal holds. The caller holds m.mu.
func (m *Manager) pausedNameTaken(k key, req StartRequest) error {
	if req.Kind != KindContext || req.Name == "" || req.resuming {
		return nil
	}
	for pk, p := range m.paused {
		if pk.owner == k.owner && p.rec.Kind == KindContext && p.rec.Name == req.Name {
			return errors.New("a context named " + req.Name + " already exists (" + p.rec.ID + ", paused)")
		}
	}
	return nil
}

// closePaused closes a paused session for good: its record and
// checkpoint are removed.
func (m *Manager) closePaused(p *pausedSession, reason string) (CloseInfo, error) {
	s, p := m.enlist(p)
	if s != nil {
		return CloseInfo{}, errors.New("session " + s.ID + " changed meanwhile: try again")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live != nil || p.gone {
		return CloseInfo{}, errors.New("session " + p.rec.ID + " changed meanwhile: try again")
	}
	// Shared: claimed first, so no replica resumes it meanwhile.
	if err := m.takeClaim(context.Background(), p); err != nil {
		return CloseInfo{}, err
	}
	p.gone = true
	k := recKey(p.rec)
	m.mu.Lock()
	if m.paused[k] == p {
		delete(m.paused, k)
	}
	m.mu.Unlock()
	m.forget(k, p.rec.Blob)
	if m.deps.Claims != nil {
		m.releaseClaims(k, p.rec.Kind, p.rec.Name)
	}
	m.logClosedPaused(p.rec, reason)
	return CloseInfo{Info: p.info(), DurationTotal: time.Since(p.rec.StartedAt)}, nil
}

// logClosedPaused writes the session_end of a paused session closed for
// good.
func (m *Manager) logClosedPaused(rec Record, reason string) {
	if log := m.deps.Log; log != nil {
		_ = log.Append(execlog.SessionFile(storageName(recKey(rec))), endEntry{Type: "session_end", SessionID: rec.ID, Owner: rec.Owner,
			Reason: reason, TotalDurationMs: time.Since(rec.StartedAt).Milliseconds(), ExecutionsCount: rec.Executions, At: time.Now().UTC()})
	}
}
