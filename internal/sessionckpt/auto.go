package sessionckpt

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/codexec/codexec/internal/tenant"
)

// Automatic checkpoints: a quiet period after each run of a live session,
// its state is checkpointed, so that a server killed outright (kill -9)
// resumes it from there. Bounded in cost: a session that has not run since
// its last checkpoint is not checkpointed again, one whose state was over
// the limit is tried again only after it ran, and after a checkpoint that
// took longer than AutoMaxCost the next waits twenty times as long.

// Schedule (re)arms s's automatic checkpoint after a run (nothing when
// they are off).
func (c *Checkpointer[S]) Schedule(s S) {
	quiet := c.o.Auto
	if quiet <= 0 {
		return
	}
	st := s.Checkpoints()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.timer != nil {
		st.timer.Reset(quiet)
		return
	}
	st.timer = time.AfterFunc(quiet, func() { c.autoCheckpoint(s) })
}

// autoCheckpoint checkpoints s unless it runs code now, has not run
// since its last checkpoint or is held back.
func (c *Checkpointer[S]) autoCheckpoint(s S) {
	if !c.host.Registered(s) || !s.Runs().TryLock() {
		return // closed, or running: its run re-arms the timer
	}
	defer s.Runs().Unlock()
	st, f := s.Checkpoints(), s.Facts()
	st.mu.Lock()
	hold := st.hold
	st.mu.Unlock()
	if s.Conn().IsDead() || st.unchanged(f.Executions) || time.Now().Before(hold) || !c.host.Registered(s) {
		return
	}
	t0 := time.Now()
	_, err := c.snapshot(tenant.With(context.Background(), f.Owner), s, true)
	c.autoDone(s, err, time.Since(t0))
}

// autoDone weighs an automatic checkpoint of s that took took.
func (c *Checkpointer[S]) autoDone(s S, err error, took time.Duration) {
	st, f := s.Checkpoints(), s.Facts()
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case errors.Is(err, ErrStateTooBig):
		st.execs = f.Executions // try again once it has run
		slog.Info("automatic checkpoint skipped: state over the limit", "session_id", f.ID)
	case err != nil:
		slog.Warn("automatic checkpoint failed", "session_id", f.ID, "err", err)
	case took > c.o.AutoMaxCost:
		st.hold = time.Now().Add(20 * took)
		slog.Info("automatic checkpoint was slow: holding the next back", "session_id", f.ID, "took", took)
	default:
		slog.Debug("automatic checkpoint", "session_id", f.ID, "took", took)
	}
}

// PauseIdle pauses s, idle for the idle timeout, and reports whether it
// did; when it could not, the caller closes s (as it does with
// Options.IdleClose, without calling PauseIdle).
func (c *Checkpointer[S]) PauseIdle(s S) bool {
	f := s.Facts()
	s.Runs().Lock()
	_, err := c.pauseLocked(tenant.With(context.Background(), f.Owner), s, "idle_timeout")
	s.Runs().Unlock()
	if err == nil {
		slog.Info("paused idle session", "session_id", f.ID, "owner", f.Owner)
		return true
	}
	slog.Warn("idle session could not be paused: closing it", "session_id", f.ID, "err", err)
	return false
}

// PauseAtShutdown pauses s as the server stops; false when it could not
// (it runs code, is dead, or its state cannot be checkpointed).
func (c *Checkpointer[S]) PauseAtShutdown(s S) bool {
	if !s.Runs().TryLock() {
		return false
	}
	defer s.Runs().Unlock()
	if s.Conn().IsDead() {
		return false
	}
	f := s.Facts()
	_, err := c.pauseLocked(tenant.With(context.Background(), f.Owner), s, "server_shutdown")
	if err != nil {
		slog.Warn("session not paused at shutdown: its state is lost", "session_id", f.ID, "err", err)
		return false
	}
	return true
}
