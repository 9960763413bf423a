package sessionckpt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
)

// Resume gives one of ctx's principal's paused sessions a new interpreter
// restored from its checkpoint, and a dead one its latest (automatic)
// checkpoint. A live session is returned as it is, with the report of a
// resume not yet reported (else nil).
func (c *Checkpointer[S]) Resume(ctx context.Context, idOrName string) (S, *Resumed, error) {
	var zero S
	s, p, err := c.host.Lookup(ctx, idOrName)
	if err != nil {
		return zero, nil, err
	}
	if p == nil && s.Conn().IsDead() {
		if p, err = c.revive(s); err != nil {
			return zero, nil, err
		}
	} else if p == nil {
		// Resumed already (by the call that found it here) and not yet
		// reported: this report is the resume's.
		return s, s.Checkpoints().TakeResumed(), nil
	}
	s, err = c.ResumePaused(ctx, p)
	if err != nil {
		return zero, nil, err
	}
	return s, s.Checkpoints().TakeResumed(), nil
}

// revive turns a session whose interpreter died into a paused one with
// its latest (automatic) checkpoint, which the caller resumes.
func (c *Checkpointer[S]) revive(s S) (*Paused[S], error) {
	s.Runs().Lock()
	defer s.Runs().Unlock()
	rec, id := s.Checkpoints().Current(), s.Facts().ID
	if rec == nil {
		return nil, fmt.Errorf("session %s is dead (%s) and has no checkpoint to resume from: close it and start a new one", id, s.Conn().DeathReason())
	}
	if !c.host.Registered(s) {
		return nil, fmt.Errorf("session %s changed meanwhile: try again", id)
	}
	// Its workspace goes first: the resume reuses the name.
	s.Checkpoints().stopAuto()
	c.host.Terminate(s)
	p := NewPaused[S](*rec)
	if !c.host.Detach(s, p) {
		return nil, fmt.Errorf("session %s changed meanwhile: try again", id)
	}
	return p, nil
}

// ResumePaused resumes p once; concurrent callers wait and get the same
// session. Its resume report waits in the session's State.
func (c *Checkpointer[S]) ResumePaused(ctx context.Context, p *Paused[S]) (S, error) {
	var zero S
	s, p := c.enlist(p)
	if p == nil {
		return s, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.live != zero:
		return p.live, nil
	case p.elsewhere:
		return zero, fmt.Errorf("%w: %s", ErrHeldElsewhere, p.rec.ID)
	case p.gone:
		return zero, fmt.Errorf("%w: %s", c.deps.NotFound, p.rec.ID)
	}
	rec := p.rec
	k := RecordKey(rec)
	if err := c.host.Reserve(k, rec.Kind); err != nil {
		c.delist(p)
		return zero, err
	}
	if err := c.takeClaim(ctx, p); err != nil {
		c.host.Drop(k)
		return zero, err
	}
	s, rep, err := c.restoreRecord(ctx, rec, k, false)
	if err != nil {
		c.host.Drop(k)
		return zero, c.failedResume(p, err)
	}
	c.resumed(s, p, rep)
	return s, nil
}

// resumed makes s, restored from p's checkpoint with report rep, the live
// session p was: with p's facts and checkpoint, and rep waiting for the
// next caller.
func (c *Checkpointer[S]) resumed(s S, p *Paused[S], rep checkpoint.Report) {
	rec := p.rec
	s.Checkpoints().set(&rec, rec.Executions)
	s.Checkpoints().resume(&Resumed{AgeS: AgeS(rec.TakenAt), Auto: rec.Auto, Report: rep})
	f := s.Facts()
	f.Kind, f.Name, f.Description, f.StartedAt, f.Executions = rec.Kind, rec.Name, rec.Description, rec.StartedAt, rec.Executions
	f.Network = recordRules(rec)
	c.host.Adopt(s, f, p)
	p.live = s
	c.logResume(f, rec, rep)
}

// failedResume is the error of p's resume that failed with err. When its
// checkpoint expired (CODEXEC_CHECKPOINT_TTL) or was removed, nothing can
// resume the session any more: it is closed.
func (c *Checkpointer[S]) failedResume(p *Paused[S], err error) error {
	rec := p.rec
	k := RecordKey(rec)
	if !errors.Is(err, files.ErrNotFound) {
		c.unclaimPaused(p)
		return fmt.Errorf("resume session %s: %w", rec.ID, err)
	}
	p.gone = true
	c.host.Unlist(p)
	c.forget(k, "")
	if c.Shared() {
		c.host.Release(k, rec.Kind, rec.Name)
	}
	return fmt.Errorf("%w: %s (its checkpoint expired or was removed; the session is closed)", c.deps.NotFound, rec.ID)
}

// restoreRecord reads rec's checkpoint and restores it into a new
// interpreter for session k (fork: reseeded generators).
func (c *Checkpointer[S]) restoreRecord(ctx context.Context, rec checkpoint.Record, k Key, fork bool) (S, checkpoint.Report, error) {
	var zero S
	t0 := time.Now()
	defer func() { slog.Debug("checkpoint restored", "session_id", k.ID, "took", time.Since(t0)) }()
	d, err := c.read(ctx, rec)
	if err != nil {
		return zero, checkpoint.Report{}, err
	}
	if d.Header.Language != rec.Language {
		return zero, checkpoint.Report{}, fmt.Errorf("%w: a %s checkpoint for a %s session", checkpoint.ErrCorrupt, d.Header.Language, rec.Language)
	}
	workingDir := rec.WorkingDir
	if fork {
		workingDir = "" // a child gets a workspace of its own
	}
	return c.restoreDecoded(ctx, d, k, rec.Language, workingDir, fork)
}

// read reads and decodes rec's checkpoint.
func (c *Checkpointer[S]) read(ctx context.Context, rec checkpoint.Record) (checkpoint.Decoded, error) {
	plain, err := c.keeper.Read(ctx, rec)
	if err != nil {
		return checkpoint.Decoded{}, err
	}
	return checkpoint.Decode(plain)
}

// restoreDecoded starts (or takes a spare) interpreter for session k,
// fills its workspace and restores the interpreter state into it.
func (c *Checkpointer[S]) restoreDecoded(ctx context.Context, d checkpoint.Decoded, k Key, lang, workingDir string, fork bool) (_ S, _ checkpoint.Report, retErr error) {
	var zero S
	t0 := time.Now()
	s, spare, err := c.interpreterFor(ctx, k, lang, workingDir, int64(len(d.Interp)))
	if err != nil {
		return zero, checkpoint.Report{}, err
	}
	t1 := time.Now()
	defer func() {
		slog.Debug("checkpoint restore", "session_id", k.ID, "spare", spare, "interpreter", t1.Sub(t0), "restore", time.Since(t1), "bytes", len(d.Interp))
	}()
	defer func() {
		if retErr != nil {
			c.host.Terminate(s)
		}
	}()
	rep := d.Header.Report
	if s.Workdir().Owned {
		n, lost := extract(s, d)
		rep.Files, rep.FilesLost = n, mergeLost(rep.FilesLost, lost)
	}
	s.Runs().Lock()
	got, err := s.Conn().Restore(ctx, d.Interp, fork, c.o.Timeout, c.deps.KillGrace)
	s.Runs().Unlock()
	if err != nil {
		return zero, checkpoint.Report{}, err
	}
	return s, rep.Merge(got).Bounded(), nil
}

// extract writes a checkpoint's workspace into s's, through its confined
// root with the sandbox user's rights.
func extract[S Live](s S, d checkpoint.Decoded) (int, map[string]string) {
	if len(d.Header.Files) == 0 {
		return 0, nil
	}
	root, err := s.Workdir().Open()
	if err != nil {
		return 0, map[string]string{"*": "workspace: " + err.Error()}
	}
	defer root.Close()
	return checkpoint.Extract(root, d)
}

func mergeLost(a, b map[string]string) map[string]string {
	if len(b) == 0 {
		return a
	}
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// interpreterFor returns a started interpreter named as session k, to
// restore size bytes of state into: a spare when one is ready (and the
// session needs no directory of the caller's), else a new one.
func (c *Checkpointer[S]) interpreterFor(ctx context.Context, k Key, lang, workingDir string, size int64) (S, bool, error) {
	if workingDir == "" {
		if s, ok := c.spares.Take(ctx, lang, size); ok {
			c.host.Rename(s, k)
			return s, true, nil
		}
	}
	s, err := c.host.Launch(ctx, k, lang, workingDir, false)
	return s, false, err
}

// logResume records the resume in the session's log (Adopt logged its
// start).
func (c *Checkpointer[S]) logResume(f Facts, rec checkpoint.Record, rep checkpoint.Report) {
	if log := c.deps.Log; log != nil {
		_ = log.Append(execlog.SessionFile(f.Storage), map[string]any{"type": "session_resume", "session_id": f.ID, "owner": f.Owner,
			"checkpoint_age_ms": time.Since(rec.TakenAt).Milliseconds(), "auto": rec.Auto, "lost": len(rep.Lost), "at": time.Now().UTC()})
	}
}

// ClosePaused closes paused session p for good: its record and checkpoint
// are removed. It returns the paused session it closed (shared, the one
// already operated on here, if any); the caller logs its end.
func (c *Checkpointer[S]) ClosePaused(p *Paused[S]) (*Paused[S], error) {
	s, p := c.enlist(p)
	if p == nil {
		return nil, fmt.Errorf("session %s changed meanwhile: try again", s.Facts().ID)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var zero S
	if p.live != zero || p.gone {
		return nil, fmt.Errorf("session %s changed meanwhile: try again", p.rec.ID)
	}
	// Shared: claimed first, so no replica resumes it meanwhile.
	if err := c.takeClaim(context.Background(), p); err != nil {
		return nil, err
	}
	p.gone = true
	k := RecordKey(p.rec)
	c.host.Unlist(p)
	c.forget(k, p.rec.Blob)
	c.host.Release(k, p.rec.Kind, p.rec.Name)
	return p, nil
}
