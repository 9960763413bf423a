package session

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/execlog"
)

// pausedSession is a session without a process: its record names the
// checkpoint a resume restores. mu serializes resumes (and close) of it.
type pausedSession struct {
	mu  sync.Mutex
	rec Record
	// live is the session it became, once resumed; gone is set when it
	// was closed. Either way waiters on mu look the id up again.
	live *Session
	gone bool
	// elsewhere: gone because another replica claimed it (shared.go).
	elsewhere bool
}

// info is the listing of a paused session.
func (p *pausedSession) info() Info {
	r := p.rec
	return Info{ID: r.ID, Name: r.Name, Kind: r.Kind, Language: r.Language, Description: r.Description, Status: StatusPaused,
		StartedAt: r.StartedAt, LastActivity: r.LastActivity, Executions: r.Executions, Packages: []string{},
		CheckpointBytes: r.Bytes}
}

// StatusPaused is the status of a session that has no process and
// resumes from its checkpoint on its next use.
const StatusPaused = "paused"

// PauseInfo is what pausing a session kept and lost.
type PauseInfo struct {
	ID     string
	Bytes  int64
	Report checkpoint.Report
}

// Pause checkpoints one of ctx's principal's live sessions, stops its
// interpreter and frees its workspace; the session stays listed as
// paused and resumes from the checkpoint (Resume, or its next use). A
// session whose state cannot be checkpointed keeps running and the error
// says why.
func (m *Manager) Pause(ctx context.Context, idOrName string) (PauseInfo, error) {
	if !m.checkpoints() {
		return PauseInfo{}, ErrCheckpointsOff
	}
	s, p, err := m.lookup(ctx, idOrName)
	if err != nil {
		return PauseInfo{}, err
	}
	if p != nil {
		return PauseInfo{ID: p.rec.ID, Bytes: p.rec.Bytes, Report: p.rec.Report}, nil
	}
	s.execMu.Lock()
	defer s.execMu.Unlock()
	return m.pauseLocked(ctx, s, "paused")
}

// pauseLocked pauses s, whose execMu the caller holds.
func (m *Manager) pauseLocked(ctx context.Context, s *Session, reason string) (PauseInfo, error) {
	if !m.registered(s) {
		return PauseInfo{}, fmt.Errorf("session %s was closed", s.ID)
	}
	if s.isDead() {
		return PauseInfo{}, fmt.Errorf("session %s is dead (%s): there is no state to checkpoint", s.ID, s.deathReason())
	}
	rec, err := m.snapshot(ctx, s, false)
	if err != nil {
		return PauseInfo{}, err
	}
	// The interpreter and its workspace go first: a resume must not meet
	// them (it reuses the workspace's name). Meanwhile the session is
	// still the live one, and callers wait for execMu.
	s.stopAuto()
	m.terminate(s)
	m.retire(s, rec)
	m.logPause(s, reason, rec)
	return PauseInfo{ID: s.ID, Bytes: rec.Bytes, Report: rec.Report}, nil
}

// snapshot takes a checkpoint of s (its execMu held), stores it, records
// it and drops the one it replaces. auto marks an automatic checkpoint of
// a session that keeps running.
func (m *Manager) snapshot(ctx context.Context, s *Session, auto bool) (Record, error) {
	o := m.opts.Checkpoints
	taken := time.Now()
	state, rep, err := s.drv.Checkpoint(ctx, o.MaxBytes, o.Timeout, m.opts.KillGrace)
	if err != nil {
		return Record{}, fmt.Errorf("checkpoint session %s: %w", s.ID, err)
	}
	// The secret check sees every name; what is stored and shown is bounded.
	secrets := rep.SecretValues()
	h := checkpoint.Header{Language: s.Language, TakenAt: taken.UTC(), Report: rep.Bounded()}
	var data []byte
	if s.ws.Owned {
		w, err := m.archive(s, o.MaxBytes-int64(len(state)))
		if err != nil {
			return Record{}, fmt.Errorf("checkpoint session %s: %w", s.ID, err)
		}
		h.Files, data = w.Files, w.Data
		h.Report.Files, h.Report.FilesLost = countFiles(w.Files), nonEmpty(w.Lost)
	} else {
		h.Report.Notes = append(h.Report.Notes, "workspace "+s.Workspace+" is your own directory: it stays where it is and is not copied")
	}
	if pk := s.packageNames(); len(pk) > 0 {
		h.Report.Notes = append(h.Report.Notes, fmt.Sprintf("installed packages are not carried: %v (install them again)", pk))
	}
	plain, err := checkpoint.Encode(h, state, data)
	if err != nil {
		return Record{}, err
	}
	if int64(len(plain)) > o.MaxBytes {
		return Record{}, fmt.Errorf("checkpoint session %s: %w of %d bytes (CODEXEC_CHECKPOINT_MAX_BYTES)", s.ID, ErrStateTooBig, o.MaxBytes)
	}
	return m.commit(ctx, s, h, plain, auto, secrets)
}

// commit stores plain as s's checkpoint and makes it the current one.
func (m *Manager) commit(ctx context.Context, s *Session, h checkpoint.Header, plain []byte, auto bool, secrets []string) (Record, error) {
	info := s.info()
	rec := Record{ID: s.ID, Owner: s.Owner, Kind: s.Kind, Language: s.Language, Name: s.Name, Description: s.Description,
		WorkingDir: s.workingDir, StartedAt: s.StartedAt, LastActivity: info.LastActivity, Executions: info.Executions,
		TakenAt: h.TakenAt, Auto: auto, Report: h.Report, Secrets: secrets}
	var old string
	if cur := s.currentRecord(); cur != nil {
		old = cur.Blob
	}
	rec, err := m.keeper.Store(ctx, s.storage, rec, plain, old)
	if err != nil {
		return Record{}, err
	}
	s.mu.Lock()
	s.ckpt, s.ckExecs = &rec, info.Executions
	s.mu.Unlock()
	if !auto {
		// A paused session will want an interpreter to resume into, ready
		// for its size; an automatic checkpoint may never be restored.
		m.spares.Expect(s.Language, rec.Bytes)
	}
	return rec, nil
}

// archive reads s's workspace through its confined root.
func (m *Manager) archive(s *Session, max int64) (checkpoint.Workspace, error) {
	root, err := s.ws.Open()
	if err != nil {
		return checkpoint.Workspace{}, fmt.Errorf("workspace: %w", err)
	}
	defer root.Close()
	return checkpoint.Archive(root, max)
}

func countFiles(fs []checkpoint.File) int {
	n := 0
	for _, f := range fs {
		if !f.Dir {
			n++
		}
	}
	return n
}

func nonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// packageNames lists the packages installed into s.
func (s *Session) packageNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.packages {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

// logPause records that s stopped with its state kept: a session_pause
// entry, and the journal forgets it (a later restart does not log it as
// ended).
func (m *Manager) logPause(s *Session, reason string, rec Record) {
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	log := m.deps.Log
	if log == nil {
		return
	}
	_ = log.Append(execlog.SessionFile(s.storage), map[string]any{"type": "session_pause", "session_id": s.ID, "owner": s.Owner,
		"reason": reason, "checkpoint_bytes": rec.Bytes, "lost": len(rec.Report.Lost), "executions_count": rec.Executions, "at": time.Now().UTC()})
	m.deps.Journal.SessionEnded(execlog.SessionFile(s.storage))
}
