package session

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/errcode"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/sessionckpt"
)

// Checkpoints (pause, resume, fork, automatic checkpoints) are package
// sessionckpt's; the Manager keeps the one registry of live and paused
// sessions and lends it through host (host.go).

// paused is a session without a process.
type paused = sessionckpt.Paused[*live]

// startCheckpoints sets up checkpoints: the paused sessions a previous
// server left, and the spare pool.
func (m *Manager) startCheckpoints() {
	m.ck = sessionckpt.New((*host)(m), sessionckpt.Deps{Blobs: m.deps.Checkpoints, Log: m.deps.Log, Journal: m.deps.Journal,
		Replicas: m.deps.Claims != nil, KillGrace: m.opts.KillGrace, NotFound: ErrNotFound,
		ChildID: func() string { return newID(KindSession) }, Storage: storageName}, m.opts.Checkpoints)
	left := m.ck.Load()
	for _, p := range left {
		m.paused[sessionckpt.RecordKey(p.Record())] = p
	}
	m.ck.OpenSpares(m.stop, left)
}

// checkpoints reports whether this Manager keeps checkpoints.
func (m *Manager) checkpoints() bool { return m.ck != nil }

// CheckpointsEnabled reports whether sessions can be paused, resumed and
// forked here.
func (m *Manager) CheckpointsEnabled() bool { return m != nil && m.checkpoints() }

// shared reports whether paused sessions are shared by replicas.
func (m *Manager) shared() bool { return m.checkpoints() && m.ck.Shared() }

// Pause checkpoints one of ctx's principal's live sessions and stops its
// interpreter (sessionckpt.Checkpointer.Pause).
func (m *Manager) Pause(ctx context.Context, idOrName string) (sessionckpt.PauseInfo, error) {
	if !m.checkpoints() {
		return sessionckpt.PauseInfo{}, sessionckpt.ErrCheckpointsOff
	}
	return m.ck.Pause(ctx, idOrName)
}

// Resume gives one of ctx's principal's paused sessions a new interpreter
// restored from its checkpoint (sessionckpt.Checkpointer.Resume).
func (m *Manager) Resume(ctx context.Context, idOrName string) (*Session, *sessionckpt.Resumed, error) {
	if !m.checkpoints() {
		return nil, nil, sessionckpt.ErrCheckpointsOff
	}
	s, r, err := m.ck.Resume(ctx, idOrName)
	return (*Session)(s), r, err
}

// Fork makes count new sessions from ctx's principal's session idOrName
// (sessionckpt.Checkpointer.Fork).
func (m *Manager) Fork(ctx context.Context, idOrName string, count int, allowSecrets bool) (sessionckpt.ForkInfo, error) {
	if !m.checkpoints() {
		return sessionckpt.ForkInfo{}, sessionckpt.ErrCheckpointsOff
	}
	return m.ck.Fork(ctx, idOrName, count, allowSecrets)
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
		if m.ck.PauseAtShutdown((*live)(s)) {
			paused++
		} else {
			failed++
		}
	}
	return paused, failed
}

// resumePaused resumes p once; concurrent callers wait and get the same
// session.
func (m *Manager) resumePaused(ctx context.Context, p *paused) (*Session, error) {
	s, err := m.ck.ResumePaused(ctx, p)
	return (*Session)(s), err
}

// fetchPaused finds principal owner's session idOrName in the shared
// records when this replica does not have it: a paused session, or one
// another replica holds (with an automatic checkpoint), which a resume
// then refuses. The paused session it returns is not kept here (see
// host.Enlist).
func (m *Manager) fetchPaused(ctx context.Context, owner, idOrName string) (*Session, *paused, error) {
	rec, err := m.ck.Find(ctx, owner, idOrName)
	if errors.Is(err, checkpoint.ErrNoRecord) {
		return nil, nil, notFound(idOrName)
	}
	if err != nil {
		return nil, nil, err
	}
	return nil, sessionckpt.NewPaused[*live](rec), nil
}

// idle pauses (or, with IdleClose or without checkpoints, closes) a
// session that was idle for the idle timeout. A pause that fails closes it.
func (m *Manager) idle(s *Session) {
	if !m.checkpoints() || m.opts.Checkpoints.IdleClose {
		slog.Info("closing idle session", "session_id", s.ID, "owner", s.Owner)
		m.stopSession(s, "idle_timeout", true)
		return
	}
	if !m.ck.PauseIdle((*live)(s)) {
		m.stopSession(s, "idle_timeout", true)
	}
}

// pausedInfo is the listing of a paused session.
func pausedInfo(p *paused) Info {
	r := p.Record()
	return Info{ID: r.ID, Name: r.Name, Kind: r.Kind, Language: r.Language, Description: r.Description, Status: sessionckpt.StatusPaused,
		StartedAt: r.StartedAt, LastActivity: r.LastActivity, Executions: r.Executions, Packages: []string{},
		CheckpointBytes: r.Bytes}
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
		if k.Owner == owner {
			out = append(out, pausedInfo(p))
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
		if r := p.Record(); pk.Owner == k.Owner && r.Kind == KindContext && r.Name == req.Name {
			return errcode.New(errcode.InvalidContextName, "a context named %s already exists (%s, paused)", req.Name, r.ID)
		}
	}
	return nil
}

// closePaused closes a paused session for good: its record and
// checkpoint are removed.
func (m *Manager) closePaused(p *paused, reason string) (CloseInfo, error) {
	p, err := m.ck.ClosePaused(p)
	if err != nil {
		return CloseInfo{}, err
	}
	rec := p.Record()
	if log := m.deps.Log; log != nil {
		_ = log.Append(execlog.SessionFile(storageName(sessionckpt.RecordKey(rec))), endEntry{Type: "session_end", SessionID: rec.ID, Owner: rec.Owner,
			Reason: reason, TotalDurationMs: time.Since(rec.StartedAt).Milliseconds(), ExecutionsCount: rec.Executions, At: time.Now().UTC()})
	}
	return CloseInfo{Info: pausedInfo(p), DurationTotal: time.Since(rec.StartedAt)}, nil
}

// pausedAll lists every principal's paused sessions (the console's
// operator view), with their owners.
func (m *Manager) pausedAll() []Owned {
	if m.shared() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Owned
	for k, p := range m.paused {
		out = append(out, Owned{Owner: k.Owner, Info: pausedInfo(p)})
	}
	return out
}
