// Package runs keeps background runs: executions whose tool call returned
// as soon as they started (with their execution id), and which the caller
// reads later (get_run), cancels (cancel_run) and lists (list_runs). A run
// belongs to the principal that started it; to any other it does not exist,
// in the same words as an id nobody used.
//
// Life of a run: Start runs a Job with a context of its own (not the call's:
// the run outlives the call and the client's connection; it ends when it is
// cancelled, times out, or the server shuts down) and returns once the
// engine has recorded the run as started (engine.OnStart), or with the
// call's answer when it was rejected before that. While it runs, its output
// is kept in memory, at most Options.OutputMax bytes of each stream (the
// rest is counted), and read from byte offsets, at most ChunkMax bytes per
// stream and read. When it ends, its result (what the call would have
// returned in the foreground) and its output go to the blob store
// (files.Store, item "run_<id>") under the store's TTL and size cap, so a
// run that ended before a restart, or on another replica sharing an S3
// store, is still read. A run a killed server never finished is logged as
// lost by the next one (package inflight, app); Get finds it in the
// execution history by its background mark. Among replicas, a run's id is
// claimed in the session registry for as long as its replica lists it
// (Claims), so calls for it are forwarded there; when that replica stops
// or dies, the registry marks the claim lost and any replica answers for
// the run: its stored result if it ended, else status lost with which
// replica stopped and when (Get, Resolve).
//
// A Manager is safe for concurrent use.
package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/errcode"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

// StatusRunning is the status of a run that has not ended; StatusLost of
// one whose server was killed while it ran. A run that ended has its
// result's status (engine's statuses).
const (
	StatusRunning = "running"
	StatusLost    = execlog.StatusLost
)

// Errors callers classify with errors.Is.
var (
	// ErrNotFound: no run of the caller has the id.
	ErrNotFound = errcode.New(errcode.ExecutionNotFound, "unknown execution")
	// ErrLimit: the caller has Options.MaxPerPrincipal runs running.
	ErrLimit = errcode.New(errcode.LimitExceeded, "too many background runs")
	// ErrClosed: the server is shutting down and starts no run.
	ErrClosed = errcode.New(errcode.ServerNotReady, "the server is shutting down and starts no background run")
)

// Why a run's context was cancelled (context.Cause), as its result says.
var (
	errCancelled = errors.New("cancelled by cancel_run (or tasks/cancel); the run was killed")
	errShutdown  = errors.New("cancelled: the server shut down while this ran; the run was killed")
	errCallGone  = errors.New("the call that was starting it was cancelled")
)

// Options bound a Manager. Zero fields take the defaults named.
type Options struct {
	// MaxPerPrincipal is how many runs of one principal are kept at once,
	// running or ended (CODEXEC_BACKGROUND_MAX_RUNS); a start beyond it
	// drops the oldest ended one from the list (its result stays in the
	// store) or, when all are running, is refused. Default 32.
	MaxPerPrincipal int
	// OutputMax is how many bytes of each stream of a run are kept for
	// reading (CODEXEC_BACKGROUND_MAX_OUTPUT). Default 1 MiB.
	OutputMax int64
	// Keep is how long an ended run stays listed: the blob store's TTL
	// (CODEXEC_ARTIFACT_TTL). Default 1 h.
	Keep time.Duration
	// Dir holds the files of a result while they are put in the store;
	// empty: os.TempDir().
	Dir string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// Deps are where results go and where lost runs are found; each may be nil.
type Deps struct {
	// Store keeps ended runs' results and output; nil: in memory only
	// (for as long as the run is listed).
	Store files.Store
	// History finds the runs a killed server left as lost.
	History History
	// Claims records this replica as the holder of its running runs, so a
	// get_run or cancel_run arriving at another replica is forwarded here.
	Claims Claims
}

// History is the execution history as Get needs it (logindex.History).
type History interface {
	Get(ctx context.Context, id string) (execlog.Entry, error)
}

// Claims is the session registry as runs use it (replicas.Set): execution
// ids are claimed like session ids, scoped by principal, with the label
// Kind LabelKind (so the listings of sessions leave them out). A claim is
// held while the run is listed (running, or ended within Keep), so the
// replica listing it answers for it, list_runs included.
type Claims interface {
	Claim(ctx context.Context, p, id string, l sessionreg.Label) error
	Release(p, id string)
	// Record is the registry's record of principal p's id, or an error
	// wrapping sessionreg.ErrNotFound.
	Record(ctx context.Context, p, id string) (sessionreg.Owner, error)
}

// LabelKind is the kind of a background run's claim in the session
// registry.
const LabelKind = "run"

// Job is the work of one background run.
type Job struct {
	// Tool names the tool that started it (execute_code, …).
	Tool string
	// Run does the work with ctx, the run's own context, reporting output
	// to obs. It returns the result the call returns in the foreground, or
	// an error when the request is rejected before the run starts.
	Run func(ctx context.Context, obs output.Observer) (Outcome, error)
	// Observe, if set, also sees the output as it comes (the start call's
	// progress notifications).
	Observe output.Observer
	// Done, if set, is called once when the run has ended or did not
	// start: it frees what the call lent the run (its execution slot, its
	// progress stream).
	Done func()
}

// Outcome is a run's result: Result is what the call returns in the
// foreground (its structured content), Status that result's status.
type Outcome struct {
	Status string
	Result any
}

// Manager keeps the background runs of this server. Create it with New.
type Manager struct {
	opts Options
	deps Deps

	mu      sync.Mutex
	byID    map[string]*run
	byOwner map[string][]*run // oldest first
	pending map[string]int    // starts not yet registered, by owner
	closing bool

	work sync.WaitGroup // running jobs
}

// New returns a Manager.
func New(opts Options, deps Deps) *Manager {
	if opts.MaxPerPrincipal <= 0 {
		opts.MaxPerPrincipal = 32
	}
	if opts.OutputMax <= 0 {
		opts.OutputMax = 1 << 20
	}
	if opts.Keep <= 0 {
		opts.Keep = time.Hour
	}
	if opts.Dir == "" {
		opts.Dir = os.TempDir()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Manager{opts: opts, deps: deps, byID: map[string]*run{}, byOwner: map[string][]*run{}, pending: map[string]int{}}
}

// Start runs j in the background for ctx's principal. It returns once the
// run has started, with its first view; or, when the request was rejected
// or ended before the run started, the call's own answer: out (a result to
// return as is) or err. j.Done is called in every case, once.
func (m *Manager) Start(ctx context.Context, j Job) (View, *Outcome, error) {
	if j.Done == nil {
		j.Done = func() {}
	}
	owner := tenant.From(ctx)
	if err := m.reserve(owner); err != nil {
		j.Done()
		return View{}, nil, err
	}
	l := m.launch(ctx, owner, j)
	select {
	case id := <-l.started:
		m.register(ctx, l.run, id)
		// Read before finish can end it: the start answer is always
		// "running" (a run of 2 ms may be over by now); get_run gives the end.
		v := m.viewOf(ctx, l.run, Read{})
		go m.finish(l, j.Done)
		return v, nil, nil
	case e := <-l.ended:
		return m.notStarted(l, j, e)
	case <-ctx.Done():
		l.run.cancel(errCallGone)
		select {
		case id := <-l.started: // it started meanwhile: a run now, cancelled
			m.register(ctx, l.run, id)
			go m.finish(l, j.Done)
		case e := <-l.ended:
			_, _, _ = m.notStarted(l, j, e)
		}
		return View{}, nil, ctx.Err()
	}
}

// starting is one job on its way: its run, the run's context, and the
// channels that say it started (its id) and that the job ended.
type starting struct {
	run     *run
	ctx     context.Context
	started chan string
	ended   chan jobEnd
}

// jobEnd is what a job's Run returned.
type jobEnd struct {
	out Outcome
	err error
}

// launch starts j's Run with a context of its own, whose engine hook says
// when the run started.
func (m *Manager) launch(ctx context.Context, owner string, j Job) starting {
	r := newRun(owner, j.Tool, m.opts.OutputMax, m.opts.Now())
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	r.cancel = cancel
	l := starting{run: r, started: make(chan string, 1), ended: make(chan jobEnd, 1)}
	l.ctx = engine.OnStart(rctx, func(id string) {
		select {
		case l.started <- id:
		default: // a job starts one logged run; a second is not this run
		}
	})
	m.work.Add(1) // done when its end is stored (finish) or it did not start
	go func() {
		o, err := j.Run(l.ctx, r.observer(j.Observe))
		l.ended <- jobEnd{o, err}
	}()
	return l
}

// notStarted answers a start whose job ended before its run started.
func (m *Manager) notStarted(l starting, j Job, e jobEnd) (View, *Outcome, error) {
	defer m.work.Done()
	m.unreserve(l.run.owner)
	l.run.cancel(nil)
	j.Done()
	if e.err != nil {
		return View{}, nil, e.err
	}
	return View{}, &e.out, nil
}

// reserve counts a start of owner, refused when owner has MaxPerPrincipal
// runs running or starting, or the Manager is closing.
func (m *Manager) reserve(owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return ErrClosed
	}
	busy := m.pending[owner]
	for _, r := range m.byOwner[owner] {
		if !r.ended() {
			busy++
		}
	}
	if busy >= m.opts.MaxPerPrincipal {
		return fmt.Errorf("%w: %d of yours are running (CODEXEC_BACKGROUND_MAX_RUNS=%d); wait for one to end or cancel_run one",
			ErrLimit, busy, m.opts.MaxPerPrincipal)
	}
	m.pending[owner]++
	return nil
}

func (m *Manager) unreserve(owner string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unreserveLocked(owner)
}

func (m *Manager) unreserveLocked(owner string) {
	if m.pending[owner]--; m.pending[owner] <= 0 {
		delete(m.pending, owner)
	}
}

// register lists r under id, dropping owner's ended runs beyond the bound
// and past Keep, and claims id for this replica.
func (m *Manager) register(ctx context.Context, r *run, id string) {
	r.mu.Lock()
	r.id = id
	r.mu.Unlock()
	m.mu.Lock()
	m.unreserveLocked(r.owner)
	for owner := range m.byOwner { // every principal's expired runs go, not only those who come back
		m.pruneLocked(owner, 0)
	}
	m.pruneLocked(r.owner, 1)
	m.byID[id] = r
	m.byOwner[r.owner] = append(m.byOwner[r.owner], r)
	m.mu.Unlock()
	if c := m.deps.Claims; c != nil {
		if err := c.Claim(ctx, r.owner, id, sessionreg.Label{Kind: LabelKind, Name: r.tool}); err != nil {
			slog.Warn("background run: claim in the session registry failed; other replicas cannot forward to it", "execution_id", id, "err", err)
			return
		}
		r.mu.Lock()
		r.claimed = true
		r.mu.Unlock()
	}
}

// release gives up r's claim in the session registry, if it holds one.
func (m *Manager) release(r *run) {
	r.mu.Lock()
	claimed := r.claimed
	r.claimed = false
	r.mu.Unlock()
	if claimed {
		m.deps.Claims.Release(r.owner, r.id)
	}
}

// pruneLocked drops owner's ended runs listed longer than Keep, then the
// oldest ended ones until room more fit the bound. m.mu is held.
func (m *Manager) pruneLocked(owner string, room int) {
	now := m.opts.Now()
	list := m.byOwner[owner]
	keep := list[:0]
	over := len(list) + room - m.opts.MaxPerPrincipal
	for _, r := range list {
		if end, ok := r.endedAt(); ok && (now.Sub(end) > m.opts.Keep || over > 0) {
			over--
			m.forgetLocked(r)
			continue
		}
		keep = append(keep, r)
	}
	if len(keep) == 0 {
		delete(m.byOwner, owner)
		return
	}
	m.byOwner[owner] = keep
}

// forgetLocked drops r from the index and releases its claim.
func (m *Manager) forgetLocked(r *run) {
	delete(m.byID, r.id)
	go m.release(r)
}

// finish waits for l's job, records its end, frees what the call lent it
// and puts the result in the store.
func (m *Manager) finish(l starting, done func()) {
	defer m.work.Done()
	r := l.run
	e := <-l.ended
	defer r.cancel(nil) // frees the context; its cause, if any, stays
	res := resultOf(e)
	r.end(res.Status, mustJSON(res.Result), m.opts.Now())
	done()
	// The claim stays while the run is listed (pruneLocked releases it):
	// the listing of this replica is where list_runs on others finds it.
	m.store(context.WithoutCancel(l.ctx), r)
}

// resultOf is a job's outcome; an error after the run started (none of the
// run paths returns one) becomes a setup_error.
func resultOf(e jobEnd) Outcome {
	if e.err == nil {
		return e.out
	}
	msg := e.err.Error()
	return Outcome{Status: engine.StatusSetupError, Result: map[string]any{"status": engine.StatusSetupError, "error_message": msg}}
}

// Stopped is what a run's result says when its context was cancelled
// because of cancel_run or the shutdown ("" otherwise); the job puts it in
// its result's error message.
func Stopped(ctx context.Context) string {
	switch c := context.Cause(ctx); c {
	case errCancelled, errShutdown:
		return c.Error()
	}
	return ""
}

// Shutdown starts no more runs, waits for the running ones until ctx ends,
// then cancels those left (their results say the server shut down) and
// waits up to killWait for them to end. It returns how many it cancelled.
func (m *Manager) Shutdown(ctx context.Context, killWait time.Duration) int {
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	idle := make(chan struct{})
	go func() { m.work.Wait(); close(idle) }()
	select {
	case <-idle:
		return 0
	case <-ctx.Done():
	}
	n := 0
	m.mu.Lock()
	for _, r := range m.byID {
		if !r.ended() {
			r.cancel(errShutdown)
			n++
		}
	}
	m.mu.Unlock()
	select {
	case <-idle:
	case <-time.After(killWait):
	}
	return n
}

// Close is Shutdown without the wait: running runs are cancelled, and
// their results stored, before it returns (it waits up to a minute).
func (m *Manager) Close() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m.Shutdown(ctx, time.Minute)
}
