package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

// View is a run as get_run and cancel_run answer: its state, the output
// read from the offsets asked for, and its result once it ended.
type View struct {
	ExecutionID string `json:"execution_id"`
	Tool        string `json:"tool,omitempty"`
	Status      string `json:"status"`
	// EndReason is set for a lost run, which has no result to carry it.
	EndReason string     `json:"end_reason,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Stdout and Stderr are the output from the offsets read, at most
	// ChunkMax bytes each; the next offsets are where to read on.
	Stdout           string `json:"stdout"`
	Stderr           string `json:"stderr"`
	NextStdoutOffset int64  `json:"next_stdout_offset"`
	NextStderrOffset int64  `json:"next_stderr_offset"`
	// More: more output than this answer carries is there already.
	More bool `json:"more,omitempty"`
	// Dropped counts the output bytes past Options.OutputMax, not kept.
	Dropped int64 `json:"dropped,omitempty"`
	// Result is what the call would have returned in the foreground (its
	// structured content), once the run ended.
	Result json.RawMessage `json:"result,omitempty"`
	// ErrorMessage says why a lost run has no result, or where an expired
	// one's went.
	// A run lost with its replica says which replica and when here; the
	// listing has them as fields (Summary).
	ErrorMessage string     `json:"error_message,omitempty"`
	lostAt       *time.Time // when a lost run's replica was found stopped
}

// Summary is a run as list_runs lists it.
type Summary struct {
	ExecutionID string     `json:"execution_id"`
	Tool        string     `json:"tool"`
	Status      string     `json:"status"`
	StartedAt   time.Time  `json:"started_at"`
	EndedAt     *time.Time `json:"ended_at,omitempty"`
	// Replica holds (or held) the run, among replicas; LostAt is when it
	// was found stopped (status lost); Note says why a replica's runs are
	// listed from the registry alone (status unreachable).
	Replica string     `json:"replica,omitempty"`
	LostAt  *time.Time `json:"lost_at,omitempty"`
	Note    string     `json:"note,omitempty"`
}

// Read is what a Get returns: the output from these offsets, after waiting
// up to Wait for the run to end or print past them.
type Read struct {
	StdoutOffset, StderrOffset int64
	Wait                       time.Duration
}

// atEnd reads no output: the offsets past any end (cancel_run's answer).
var atEnd = Read{StdoutOffset: math.MaxInt64, StderrOffset: math.MaxInt64}

// Holds reports whether this server holds ctx's principal's run id in
// memory (so a call for it is served here, not forwarded).
func (m *Manager) Holds(ctx context.Context, id string) bool {
	return m.lookup(ctx, id) != nil
}

// lookup returns ctx's principal's run id held in memory, or nil.
func (m *Manager) lookup(ctx context.Context, id string) *run {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.byID[id]
	if r == nil || !tenant.Owns(ctx, r.owner) {
		return nil
	}
	return r
}

// Get returns ctx's principal's run id as rd reads it: from memory, from
// the store for a run that ended before this server started (or on another
// replica), or from the execution history for a lost or expired one.
// Another principal's run is ErrNotFound, as an id nobody used.
func (m *Manager) Get(ctx context.Context, id string, rd Read) (View, error) {
	r := m.lookup(ctx, id)
	if r == nil {
		return m.load(ctx, id, rd)
	}
	r.await(ctx, rd.StdoutOffset, rd.StderrOffset, rd.Wait)
	return m.viewOf(ctx, r, rd), nil
}

// Cancel kills ctx's principal's run id as a timeout does (its result says
// it was cancelled), waits up to wait for it to end, and returns it without
// output. A run that has ended is returned as it is.
func (m *Manager) Cancel(ctx context.Context, id string, wait time.Duration) (View, error) {
	r := m.lookup(ctx, id)
	if r == nil {
		return m.load(ctx, id, atEnd)
	}
	if !r.ended() {
		r.cancel(errCancelled)
		r.awaitEnd(ctx, wait)
	}
	return m.viewOf(ctx, r, atEnd), nil
}

// List returns ctx's principal's runs held by this server, newest first,
// with status status ("" = any), at most limit.
func (m *Manager) List(ctx context.Context, status string, limit int) []Summary {
	p := tenant.From(ctx)
	m.mu.Lock()
	m.pruneLocked(p, 0)
	list := slices.Clone(m.byOwner[p])
	m.mu.Unlock()
	out := []Summary{}
	for i := len(list) - 1; i >= 0 && len(out) < limit; i-- {
		s := list[i].summary()
		if status == "" || s.Status == status {
			out = append(out, s)
		}
	}
	return out
}

// Owned is a run's summary with the principal that started it.
type Owned struct {
	Owner string
	Summary
}

// ListAll returns every principal's runs held by this server, newest
// first, at most limit: for an operator's view (the console), never for
// a tool, whose caller sees only its own (List).
func (m *Manager) ListAll(limit int) []Owned {
	m.mu.Lock()
	var all []*run
	for _, list := range m.byOwner {
		all = append(all, list...)
	}
	m.mu.Unlock()
	out := make([]Owned, 0, len(all))
	for _, r := range all {
		out = append(out, Owned{Owner: r.owner, Summary: r.summary()})
	}
	slices.SortStableFunc(out, func(a, b Owned) int { return b.StartedAt.Compare(a.StartedAt) })
	return out[:min(len(out), limit)]
}

// OwnerOf returns the principal of run id held by this server, so an
// operator's view can read it as its owner; ok is false for a run not
// held here.
func (m *Manager) OwnerOf(id string) (owner string, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.byID[id]; r != nil {
		return r.owner, true
	}
	return "", false
}

// summary is r as listed.
func (r *run) summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Summary{ExecutionID: r.id, Tool: r.tool, Status: r.status, StartedAt: r.started}
	if r.status != StatusRunning {
		s.EndedAt = &r.endTime
	}
	return s
}

// awaitEnd waits until r ended, wait passed or ctx ended.
func (r *run) awaitEnd(ctx context.Context, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for !r.ended() {
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return
		}
		r.await(ctx, math.MaxInt64, math.MaxInt64, left)
	}
}

// viewOf is r read as rd says, its output from the store once stored there.
func (m *Manager) viewOf(ctx context.Context, r *run, rd Read) View {
	r.mu.Lock()
	v := View{ExecutionID: r.id, Tool: r.tool, Status: r.status, StartedAt: r.started,
		Dropped: r.stdout.dropped + r.stderr.dropped, Result: r.result}
	ended := r.status != StatusRunning
	if ended {
		end := r.endTime
		v.EndedAt = &end
	}
	stored, outSize, errSize := r.stored, r.outSize, r.errSize
	if !stored {
		v.Stdout, v.NextStdoutOffset = r.stdout.read(rd.StdoutOffset, ended)
		v.Stderr, v.NextStderrOffset = r.stderr.read(rd.StderrOffset, ended)
		v.More = v.NextStdoutOffset < r.stdout.size() || v.NextStderrOffset < r.stderr.size()
	}
	r.mu.Unlock()
	if stored {
		m.readStored(ctx, &v, rd, outSize, errSize)
	}
	return v
}

// validID reports whether id can name an execution (exec_ and letters,
// digits, '_' or '-'); anything else is not looked up anywhere.
func validID(id string) bool {
	rest, ok := strings.CutPrefix(id, "exec_")
	if !ok || rest == "" || len(id) > 64 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// notFound is the one answer for a run that does not exist for the caller.
func notFound(id string) error {
	return fmt.Errorf("%w: %s (list_runs lists your background runs; get_execution_log has other executions)", ErrNotFound, id)
}

// load finds a run this server does not hold: in the store, else in the
// history (a run logged as ended or lost), else as a run whose replica
// stopped while it ran (its claim in the registry is lost).
func (m *Manager) load(ctx context.Context, id string, rd Read) (View, error) {
	if !validID(id) {
		return View{}, notFound(id)
	}
	if v, ok, err := m.loadStored(ctx, id, rd); ok || err != nil {
		return v, err
	}
	lost, err := m.lostClaim(ctx, id)
	if err != nil {
		return View{}, err
	}
	e, err := m.logged(ctx, id)
	switch {
	case err == nil:
		return loggedView(e, lost), nil
	case errors.Is(err, ErrNotFound) && lost != nil:
		return lostView(*lost), nil
	}
	return View{}, err
}

// logged is background run id's entry in the history, or ErrNotFound.
func (m *Manager) logged(ctx context.Context, id string) (execlog.Entry, error) {
	if m.deps.History == nil {
		return execlog.Entry{}, notFound(id)
	}
	e, err := m.deps.History.Get(ctx, id)
	if errors.Is(err, logindex.ErrNotFound) || err == nil && !e.Background {
		return execlog.Entry{}, notFound(id)
	}
	return e, err
}

// loggedView is a run known from its history entry e; lost, when set, is
// its claim, lost with the replica that ran it.
func loggedView(e execlog.Entry, lost *sessionreg.Owner) View {
	v := View{ExecutionID: e.ExecutionID, Tool: e.Tool, Status: e.Status, StartedAt: e.ExecutedAt, ErrorMessage: e.ErrorMessage}
	switch {
	case e.Status == StatusLost:
		v.EndReason = StatusLost
	case lost != nil:
		v.ErrorMessage = fmt.Sprintf("its output and result stayed on replica %s, which stopped at %s; get_execution_log has its log entry",
			lost.Replica.ID, lost.LostAt.UTC().Format(time.RFC3339))
	default:
		v.ErrorMessage = "its output and result were kept for CODEXEC_ARTIFACT_TTL and are gone; get_execution_log has its log entry"
	}
	return v
}

// lostView is a run whose replica stopped while it ran, known from its
// lost claim o: status lost, as a restarted server reports a run it never
// finished, with which replica stopped and when.
func lostView(o sessionreg.Owner) View {
	at := o.LostAt.UTC()
	return View{ExecutionID: o.SessionID, Tool: o.Label.Name, Status: StatusLost, EndReason: StatusLost, StartedAt: o.ClaimedAt, lostAt: &at,
		ErrorMessage: fmt.Sprintf("Replica %s stopped (drained, killed or crashed) at %s while this ran; its output and exit status are unknown.",
			o.Replica.ID, at.Format(time.RFC3339))}
}

// lostClaim is ctx's principal's claim of id when it is lost, else nil.
func (m *Manager) lostClaim(ctx context.Context, id string) (*sessionreg.Owner, error) {
	if m.deps.Claims == nil {
		return nil, nil
	}
	o, err := m.deps.Claims.Record(ctx, tenant.From(ctx), id)
	if errors.Is(err, sessionreg.ErrNotFound) || err == nil && (o.LostAt == nil || o.Label.Kind != LabelKind) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// Resolve is how list_runs shows a run known from its lost claim o (its
// replica stopped): as stored if it ended and its result is in the store,
// as logged if the history has it, else lost.
func (m *Manager) Resolve(ctx context.Context, o sessionreg.Owner) Summary {
	v, ok, err := m.loadStored(ctx, o.SessionID, atEnd)
	if !ok || err != nil {
		if e, err := m.logged(ctx, o.SessionID); err == nil {
			v = loggedView(e, &o)
		} else {
			v = lostView(o)
		}
	}
	return Summary{ExecutionID: o.SessionID, Tool: v.Tool, Status: v.Status, StartedAt: v.StartedAt, EndedAt: v.EndedAt,
		Replica: o.Replica.ID, LostAt: v.lostAt}
}

// Keep is how long an ended run stays readable here (Options.Keep, its
// default applied): the least time a run's result is kept after it ended.
func (m *Manager) Keep() time.Duration { return m.opts.Keep }
