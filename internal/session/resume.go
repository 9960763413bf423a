package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/tenant"
)

// Resumed is what a resumed session (or a fork child) reports once: how
// old its checkpoint is and, by name, what came back and what did not.
type Resumed struct {
	// AgeS is the checkpoint's age in seconds.
	AgeS float64 `json:"age_s"`
	// Auto: the checkpoint was taken automatically while the session ran
	// (the server stopped without pausing it); work after it is lost.
	Auto bool `json:"auto,omitempty"`
	checkpoint.Report
}

// Resume gives one of ctx's principal's paused sessions a new interpreter
// restored from its checkpoint. A live session is returned as it is, with
// the report of a resume not yet reported (else nil).
func (m *Manager) Resume(ctx context.Context, idOrName string) (*Session, *Resumed, error) {
	if !m.checkpoints() {
		return nil, nil, ErrCheckpointsOff
	}
	s, p, err := m.lookup(ctx, idOrName)
	if err != nil {
		return nil, nil, err
	}
	if s != nil && s.isDead() {
		if p, err = m.revive(s); err != nil {
			return nil, nil, err
		}
	} else if s != nil {
		// Resumed already (by the call that found it here) and not yet
		// reported: this report is the resume's.
		return s, s.takeResumed(), nil
	}
	s, err = m.resumePaused(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	return s, s.takeResumed(), nil
}

// revive turns a session whose interpreter died into a paused one with
// its latest (automatic) checkpoint, which the caller resumes.
func (m *Manager) revive(s *Session) (*pausedSession, error) {
	s.execMu.Lock()
	defer s.execMu.Unlock()
	rec := s.currentRecord()
	if rec == nil {
		return nil, fmt.Errorf("session %s is dead (%s) and has no checkpoint to resume from: close it and start a new one", s.ID, s.deathReason())
	}
	if !m.registered(s) {
		return nil, fmt.Errorf("session %s changed meanwhile: try again", s.ID)
	}
	// Its workspace goes first: the resume reuses the name.
	s.stopAuto()
	m.terminate(s)
	p := &pausedSession{rec: *rec}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byID, s.key())
	m.paused[s.key()] = p
	return p, nil
}

// resumePaused resumes p once; concurrent callers wait and get the same
// session.
func (m *Manager) resumePaused(ctx context.Context, p *pausedSession) (*Session, error) {
	s, p := m.enlist(p)
	if s != nil {
		return s, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.live != nil:
		return p.live, nil
	case p.elsewhere:
		return nil, fmt.Errorf("%w: %s", ErrHeldElsewhere, p.rec.ID)
	case p.gone:
		return nil, fmt.Errorf("%w: %s", ErrNotFound, p.rec.ID)
	}
	rec := p.rec
	k := recKey(rec)
	if err := m.reserveResume(k, rec.Kind); err != nil {
		m.delist(p)
		return nil, err
	}
	if err := m.takeClaim(ctx, p); err != nil {
		m.mu.Lock()
		delete(m.byID, k)
		m.mu.Unlock()
		return nil, err
	}
	s, rep, err := m.restoreRecord(ctx, rec, k, false)
	if err != nil {
		m.mu.Lock()
		delete(m.byID, k)
		m.mu.Unlock()
		if errors.Is(err, files.ErrNotFound) {
			// The checkpoint expired (CODEXEC_CHECKPOINT_TTL) or was
			// removed: nothing can resume the session any more.
			p.gone = true
			m.mu.Lock()
			delete(m.paused, k)
			m.mu.Unlock()
			m.forget(k, "")
			if m.shared() {
				m.releaseClaims(k, rec.Kind, rec.Name)
			}
			return nil, fmt.Errorf("%w: %s (its checkpoint expired or was removed; the session is closed)", ErrNotFound, rec.ID)
		}
		m.unclaimPaused(k, p)
		return nil, fmt.Errorf("resume session %s: %w", rec.ID, err)
	}
	s.Kind, s.Name, s.Description, s.StartedAt = rec.Kind, rec.Name, rec.Description, rec.StartedAt
	s.mu.Lock()
	s.executions, s.ckpt, s.ckExecs = rec.Executions, &rec, rec.Executions
	s.resumed = &Resumed{AgeS: ageS(rec.TakenAt), Auto: rec.Auto, Report: rep}
	s.mu.Unlock()
	m.mu.Lock()
	delete(m.paused, k)
	m.byID[k] = s
	m.mu.Unlock()
	p.live = s
	m.logResume(s, rec, rep)
	return s, nil
}

func ageS(t time.Time) float64 {
	return math.Round(time.Since(t).Seconds()*10) / 10
}

// reserveResume holds a live slot for k within the session limits.
func (m *Manager) reserveResume(k key, kind string) error {
	return m.reserve(k, StartRequest{Kind: kind, resuming: true})
}

// restoreRecord reads rec's checkpoint and restores it into a new
// interpreter registered as session k (fork: reseeded generators).
func (m *Manager) restoreRecord(ctx context.Context, rec Record, k key, fork bool) (*Session, checkpoint.Report, error) {
	t0 := time.Now()
	defer func() { slog.Debug("checkpoint restored", "session_id", k.id, "took", time.Since(t0)) }()
	plain, err := m.keeper.Read(ctx, rec)
	if err != nil {
		return nil, checkpoint.Report{}, err
	}
	d, err := checkpoint.Decode(plain)
	if err != nil {
		return nil, checkpoint.Report{}, err
	}
	if d.Header.Language != rec.Language {
		return nil, checkpoint.Report{}, fmt.Errorf("%w: a %s checkpoint for a %s session", checkpoint.ErrCorrupt, d.Header.Language, rec.Language)
	}
	workingDir := rec.WorkingDir
	if fork {
		workingDir = "" // a child gets a workspace of its own
	}
	return m.restoreDecoded(ctx, d, k, rec.Language, workingDir, fork)
}

// restoreDecoded starts (or takes a spare) interpreter for session k,
// fills its workspace and restores the interpreter state into it.
func (m *Manager) restoreDecoded(ctx context.Context, d checkpoint.Decoded, k key, lang, workingDir string, fork bool) (_ *Session, _ checkpoint.Report, retErr error) {
	t0 := time.Now()
	s, spare, err := m.interpreterFor(ctx, k, lang, workingDir, int64(len(d.Interp)))
	if err != nil {
		return nil, checkpoint.Report{}, err
	}
	t1 := time.Now()
	defer func() {
		slog.Debug("checkpoint restore", "session_id", k.id, "spare", spare, "interpreter", t1.Sub(t0), "restore", time.Since(t1), "bytes", len(d.Interp))
	}()
	defer func() {
		if retErr != nil {
			m.terminate(s)
		}
	}()
	rep := d.Header.Report
	if s.ws.Owned {
		n, lost := m.extract(s, d)
		rep.Files, rep.FilesLost = n, mergeLost(rep.FilesLost, lost)
	}
	s.execMu.Lock()
	got, err := s.drv.Restore(ctx, d.Interp, fork, m.opts.Checkpoints.Timeout, m.opts.KillGrace)
	s.execMu.Unlock()
	if err != nil {
		return nil, checkpoint.Report{}, err
	}
	return s, rep.Merge(got).Bounded(), nil
}

// extract writes a checkpoint's workspace into s's, through its confined
// root with the sandbox user's rights.
func (m *Manager) extract(s *Session, d checkpoint.Decoded) (int, map[string]string) {
	if len(d.Header.Files) == 0 {
		return 0, nil
	}
	root, err := s.ws.Open()
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
func (m *Manager) interpreterFor(ctx context.Context, k key, lang, workingDir string, size int64) (*Session, bool, error) {
	if workingDir == "" {
		if s := m.takeSpare(ctx, lang, size); s != nil {
			s.adopt(k)
			return s, true, nil
		}
	}
	s, err := m.launch(ctx, k, lang, StartRequest{Kind: KindSession, WorkingDir: workingDir})
	return s, false, err
}

// takeResumed returns the resume report once.
func (s *Session) takeResumed() *Resumed {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.resumed
	s.resumed = nil
	return r
}

// logResume records the resume in the session's log and the journal.
func (m *Manager) logResume(s *Session, rec Record, rep checkpoint.Report) {
	s.mu.Lock()
	s.ended = false
	s.mu.Unlock()
	log := m.deps.Log
	if log == nil {
		return
	}
	m.logStart(s, execlog.CallContext{})
	_ = log.Append(execlog.SessionFile(s.storage), map[string]any{"type": "session_resume", "session_id": s.ID, "owner": s.Owner,
		"checkpoint_age_ms": time.Since(rec.TakenAt).Milliseconds(), "auto": rec.Auto, "lost": len(rep.Lost), "at": time.Now().UTC()})
}

// ForkResult is one fork child: its session id, or why it failed.
type ForkResult struct {
	ID  string
	Err error
}

// ForkInfo is the outcome of Fork.
type ForkInfo struct {
	Children []ForkResult
	// Resumed is the first child's report (what each child restored and
	// lost; children differ only when one fails to import something).
	Resumed *Resumed
}

// ErrBadCount is a fork count outside 1..MaxFork.
var ErrBadCount = errors.New("bad fork count")

// ErrSecrets refuses to fork a session holding values that look like
// secrets without the caller's say-so.
type ErrSecrets struct{ Names []string }

func (e *ErrSecrets) Error() string {
	return fmt.Sprintf("the session holds values whose names look like secrets (%v): pass allow_secrets: true to copy them into the children", e.Names)
}

// Fork makes count new sessions, each restored from a fresh checkpoint of
// ctx's principal's session idOrName (its latest checkpoint when paused)
// in its own sandbox, with a copy of its workspace and reseeded random
// generators. Each child counts against the session limits; per-child
// failures are in the result.
func (m *Manager) Fork(ctx context.Context, idOrName string, count int, allowSecrets bool) (ForkInfo, error) {
	if !m.checkpoints() {
		return ForkInfo{}, ErrCheckpointsOff
	}
	if count < 1 || count > m.opts.Checkpoints.MaxFork {
		return ForkInfo{}, fmt.Errorf("%w: count must be 1-%d (CODEXEC_CHECKPOINT_MAX_FORK), got %d", ErrBadCount, m.opts.Checkpoints.MaxFork, count)
	}
	rec, err := m.forkSource(ctx, idOrName)
	if err != nil {
		return ForkInfo{}, err
	}
	if names := rec.Secrets; len(names) > 0 && !allowSecrets {
		return ForkInfo{}, &ErrSecrets{Names: names}
	}
	plain, err := m.keeper.Read(ctx, rec)
	if err != nil {
		return ForkInfo{}, err
	}
	d, err := checkpoint.Decode(plain)
	if err != nil {
		return ForkInfo{}, err
	}
	info := m.forkChildren(ctx, rec, d, count)
	// The next fork this wide finds its interpreters started.
	m.spares.WantN(rec.Language, count)
	return info, nil
}

// forkSource returns the checkpoint children restore: a fresh one of a
// live session, the latest of a paused one.
func (m *Manager) forkSource(ctx context.Context, idOrName string) (Record, error) {
	s, p, err := m.lookup(ctx, idOrName)
	if err != nil {
		return Record{}, err
	}
	if p != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.rec, nil
	}
	s.execMu.Lock()
	defer s.execMu.Unlock()
	if s.isDead() {
		return Record{}, fmt.Errorf("session %s is dead (%s): there is no state to fork", s.ID, s.deathReason())
	}
	if s.unchanged() {
		return *s.currentRecord(), nil
	}
	return m.snapshot(ctx, s, true)
}

// forkChildren restores count children in parallel.
func (m *Manager) forkChildren(ctx context.Context, rec Record, d checkpoint.Decoded, count int) ForkInfo {
	out := ForkInfo{Children: make([]ForkResult, count)}
	reps := make([]*Resumed, count)
	done := make(chan int, count)
	for i := range count {
		go func() {
			defer func() { done <- i }()
			s, rep, err := m.forkOne(ctx, rec, d)
			if err != nil {
				out.Children[i].Err = err
				return
			}
			out.Children[i].ID = s.ID
			reps[i] = &Resumed{AgeS: ageS(rec.TakenAt), Report: rep}
		}()
	}
	for range count {
		<-done
	}
	for _, r := range reps {
		if r != nil {
			out.Resumed = r
			break
		}
	}
	if out.Resumed != nil && rec.WorkingDir != "" {
		out.Resumed.Notes = append(out.Resumed.Notes, "each child has an empty workspace of its own")
	}
	return out
}

// forkOne makes one child session of rec's principal.
func (m *Manager) forkOne(ctx context.Context, rec Record, d checkpoint.Decoded) (*Session, checkpoint.Report, error) {
	k := key{rec.Owner, newID(KindSession)}
	if err := m.reserveResume(k, KindSession); err != nil {
		return nil, checkpoint.Report{}, err
	}
	if err := m.claim(tenant.With(ctx, rec.Owner), k, rec.Language, StartRequest{Kind: KindSession}); err != nil {
		m.drop(k)
		return nil, checkpoint.Report{}, err
	}
	s, rep, err := m.restoreDecoded(ctx, d, k, rec.Language, "", true)
	if err != nil {
		m.drop(k)
		if m.deps.Claims != nil {
			m.releaseClaims(k, KindSession, "")
		}
		return nil, checkpoint.Report{}, err
	}
	s.Kind, s.Description = KindSession, "fork of "+rec.ID
	m.mu.Lock()
	m.byID[k] = s
	m.mu.Unlock()
	m.logStart(s, execlog.CallContext{})
	slog.Info("session forked", "parent", rec.ID, "child", s.ID)
	return s, rep, nil
}
