package sessionckpt

import (
	"context"
	"fmt"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/execlog"
)

// Pause checkpoints one of ctx's principal's live sessions, stops its
// interpreter and frees its workspace; the session stays listed as
// paused and resumes from the checkpoint (Resume, or its next use). A
// session whose state cannot be checkpointed keeps running and the error
// says why. A paused session's latest pause is reported again.
func (c *Checkpointer[S]) Pause(ctx context.Context, idOrName string) (PauseInfo, error) {
	s, p, err := c.host.Lookup(ctx, idOrName)
	if err != nil {
		return PauseInfo{}, err
	}
	if p != nil {
		return PauseInfo{ID: p.rec.ID, Bytes: p.rec.Bytes, Report: p.rec.Report}, nil
	}
	s.Runs().Lock()
	defer s.Runs().Unlock()
	return c.pauseLocked(ctx, s, "paused")
}

// pauseLocked pauses s, whose Runs the caller holds.
func (c *Checkpointer[S]) pauseLocked(ctx context.Context, s S, reason string) (PauseInfo, error) {
	id := s.Facts().ID
	if !c.host.Registered(s) {
		return PauseInfo{}, fmt.Errorf("session %s was closed", id)
	}
	if s.Conn().IsDead() {
		return PauseInfo{}, fmt.Errorf("session %s is dead (%s): there is no state to checkpoint", id, s.Conn().DeathReason())
	}
	rec, err := c.snapshot(ctx, s, false)
	if err != nil {
		return PauseInfo{}, err
	}
	c.retire(s, rec, reason)
	return PauseInfo{ID: id, Bytes: rec.Bytes, Report: rec.Report}, nil
}

// retire stops s and makes it a paused session with checkpoint rec. The
// interpreter and its workspace go first: a resume must not meet them (it
// reuses the workspace's name). Meanwhile the session is still the live
// one, and callers wait for Runs. Shared, the registry marks it paused
// (held by no replica) before this replica forgets it: until then a call
// here finds it live and waits, and cannot resume it from its record
// while the registry still names this replica. Not shared, it stays
// paused here.
func (c *Checkpointer[S]) retire(s S, rec checkpoint.Record, reason string) {
	s.Checkpoints().stopAuto()
	c.host.Terminate(s)
	if c.Shared() {
		c.sharePausedClaims(rec)
		c.host.Detach(s, nil)
	} else {
		c.host.Detach(s, NewPaused[S](rec))
	}
	c.logPause(s.Facts(), reason, rec)
}

// Lose pauses s, whose interpreter died running code (why), at its
// current checkpoint; false when it has none (its state is lost). The
// caller holds s's Runs.
func (c *Checkpointer[S]) Lose(s S, why string) bool {
	rec := s.Checkpoints().Current()
	if rec == nil {
		return false
	}
	c.retire(s, *rec, "lost: "+why)
	return true
}

// Discard removes a closed session's checkpoint and record, and disarms
// its automatic checkpoint.
func (c *Checkpointer[S]) Discard(s S) {
	s.Checkpoints().stopAuto()
	if rec := s.Checkpoints().Current(); rec != nil {
		f := s.Facts()
		c.forget(Key{f.Owner, f.ID}, rec.Blob)
	}
}

// snapshot takes a checkpoint of s (its Runs held), stores it, records
// it and drops the one it replaces. auto marks an automatic checkpoint of
// a session that keeps running.
func (c *Checkpointer[S]) snapshot(ctx context.Context, s S, auto bool) (checkpoint.Record, error) {
	o, f := c.o, s.Facts()
	taken := time.Now()
	state, rep, err := s.Conn().Checkpoint(ctx, o.MaxBytes, o.Timeout, c.deps.KillGrace)
	if err != nil {
		return checkpoint.Record{}, fmt.Errorf("checkpoint session %s: %w", f.ID, err)
	}
	// The secret check sees every name; what is stored and shown is bounded.
	secrets := rep.SecretValues()
	h := checkpoint.Header{Language: f.Language, TakenAt: taken.UTC(), Report: rep.Bounded()}
	var data []byte
	if s.Workdir().Owned {
		w, err := archive(s, o.MaxBytes-int64(len(state)))
		if err != nil {
			return checkpoint.Record{}, fmt.Errorf("checkpoint session %s: %w", f.ID, err)
		}
		h.Files, data = w.Files, w.Data
		h.Report.Files, h.Report.FilesLost = countFiles(w.Files), nonEmpty(w.Lost)
	} else {
		h.Report.Notes = append(h.Report.Notes, "workspace "+f.Workspace+" is your own directory: it stays where it is and is not copied")
	}
	if pk := f.Packages; len(pk) > 0 {
		h.Report.Notes = append(h.Report.Notes, fmt.Sprintf("installed packages are not carried: %v (install them again)", pk))
	}
	plain, err := checkpoint.Encode(h, state, data)
	if err != nil {
		return checkpoint.Record{}, err
	}
	if int64(len(plain)) > o.MaxBytes {
		return checkpoint.Record{}, fmt.Errorf("checkpoint session %s: %w of %d bytes (CODEXEC_CHECKPOINT_MAX_BYTES)", f.ID, ErrStateTooBig, o.MaxBytes)
	}
	return c.commit(ctx, s, h, plain, auto, secrets)
}

// commit stores plain as s's checkpoint and makes it the current one.
func (c *Checkpointer[S]) commit(ctx context.Context, s S, h checkpoint.Header, plain []byte, auto bool, secrets []string) (checkpoint.Record, error) {
	f := s.Facts()
	rec := checkpoint.Record{ID: f.ID, Owner: f.Owner, Kind: f.Kind, Language: f.Language, Name: f.Name, Description: f.Description,
		WorkingDir: f.WorkingDir, StartedAt: f.StartedAt, LastActivity: f.LastActivity, Executions: f.Executions,
		TakenAt: h.TakenAt, Auto: auto, Report: h.Report, Secrets: secrets, Network: ruleStrings(f.Network)}
	var old string
	if cur := s.Checkpoints().Current(); cur != nil {
		old = cur.Blob
	}
	rec, err := c.keeper.Store(ctx, f.Storage, rec, plain, old)
	if err != nil {
		return checkpoint.Record{}, err
	}
	s.Checkpoints().set(&rec, f.Executions)
	if !auto {
		// A paused session will want an interpreter to resume into, ready
		// for its size; an automatic checkpoint may never be restored.
		c.spares.Expect(f.Language, rec.Bytes)
	}
	return rec, nil
}

// archive reads s's workspace through its confined root.
func archive[S Live](s S, max int64) (checkpoint.Workspace, error) {
	root, err := s.Workdir().Open()
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

// logPause records that a session stopped with its state kept: a
// session_pause entry, and the journal forgets it (a later restart does
// not log it as ended).
func (c *Checkpointer[S]) logPause(f Facts, reason string, rec checkpoint.Record) {
	log := c.deps.Log
	if log == nil {
		return
	}
	_ = log.Append(execlog.SessionFile(f.Storage), map[string]any{"type": "session_pause", "session_id": f.ID, "owner": f.Owner,
		"reason": reason, "checkpoint_bytes": rec.Bytes, "lost": len(rec.Report.Lost), "executions_count": rec.Executions, "at": time.Now().UTC()})
	c.deps.Journal.SessionEnded(execlog.SessionFile(f.Storage))
}
