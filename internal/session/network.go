package session

import (
	"context"
	"log/slog"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/engine"
)

// A session's network: its policy is the session's (kept in its
// checkpoints, so a resumed or forked session has the same and a fork never
// more), its binding the interpreter's (one per started interpreter, kept
// for its life, engine.BindNetwork). Replacing the policy
// (ExecRequest.Network) takes effect for new connections; open ones go on.

// bindNetwork binds s's next interpreter with s's policy, closing the
// binding of the one before (a restarted or restored interpreter).
func (m *Manager) bindNetwork(s *Session) *engine.Network {
	n := m.eng.BindNetwork(s.Owner, s.storage, s.networkPolicy())
	s.mu.Lock()
	old := s.net
	s.net = n
	s.mu.Unlock()
	old.Close()
	return n
}

// networkPolicy is s's policy.
func (s *Session) networkPolicy() egress.Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.policy
}

// setNetwork replaces s's policy whole, for its interpreter's new
// connections too.
func (s *Session) setNetwork(p egress.Policy) {
	s.mu.Lock()
	s.policy = p
	n := s.net
	s.mu.Unlock()
	n.SetPolicy(p)
}

// adoptNetwork gives a restored interpreter (resume, fork) the policy its
// checkpoint recorded, as long as the caller's ceiling still holds it (the
// operator may have narrowed it since): otherwise none.
func (m *Manager) adoptNetwork(s *Session, rules []egress.Rule) {
	p := egress.Policy{Allow: rules}
	if p.None() {
		s.setNetwork(egress.Policy{})
		return
	}
	if _, err := m.deps.Egress.Resolve(s.Owner, &p); err != nil {
		slog.Warn("restored session loses its network: its policy is no longer within its ceiling", "session_id", s.ID, "err", err)
		p = egress.Policy{}
	}
	s.setNetwork(p)
}

// runAudit returns the audit of one run of s, given the record before
// it: what changed since (nil when nothing was tried).
func (s *Session) runAudit(before []egress.Entry) []egress.Entry {
	d := engine.NetworkDelta(before, s.networkRecord())
	if len(d) == 0 {
		return nil
	}
	return d
}

// networkRecord is the audit of s's interpreter so far.
func (s *Session) networkRecord() []egress.Entry {
	s.mu.Lock()
	n := s.net
	s.mu.Unlock()
	return n.Record()
}

// hostNetwork reports whether s's interpreter has the host's network (a
// mode without isolation).
func (s *Session) hostNetwork() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.net.Host()
}

// closeNetwork ends s's binding (the interpreter is gone).
func (s *Session) closeNetwork() {
	s.mu.Lock()
	n := s.net
	s.net = nil
	s.mu.Unlock()
	n.Close()
}

// traceNetwork makes the send running in ctx the span s's connections are
// recorded on (a no-op while tracing is off).
func (s *Session) traceNetwork(ctx context.Context) {
	s.mu.Lock()
	n := s.net
	s.mu.Unlock()
	n.TraceIn(ctx)
}
