package sessionckpt

import (
	"context"
	"crypto/rand"
	"log/slog"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/driver"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/inflight"
	"github.com/codexec/codexec/internal/spares"
)

// Deps are what a Checkpointer runs on, made by the session manager.
// Blobs, KillGrace, NotFound, ChildID and Storage are required.
type Deps struct {
	// Blobs keeps the checkpoints themselves; required.
	Blobs checkpoint.Blobs
	// Log is the execution log (session_pause and session_resume entries);
	// nil logs nothing. Journal records sessions in flight; nil records
	// nothing.
	Log     *execlog.Logger
	Journal *inflight.Journal
	// Replicas: the manager's claims are a registry other replicas share.
	Replicas bool
	// KillGrace bounds the wait for an interpreter that does not answer.
	KillGrace time.Duration
	// NotFound is the error a session that does not exist (any more)
	// wraps.
	NotFound error
	// ChildID makes a fork child's session id.
	ChildID func() string
	// Storage names session k on disk and in the log (Facts.Storage).
	Storage func(k Key) string
}

// Checkpointer pauses, resumes and forks the sessions of one Host and
// checkpoints them automatically. Make it with New; it is safe for
// concurrent use, and serialises with a session's runs through Live.Runs.
type Checkpointer[S Live] struct {
	host   Host[S]
	deps   Deps
	o      Options
	keeper *checkpoint.Keeper
	spares spares.Pool[S]
}

// New returns a Checkpointer of host's sessions with options o (zero
// fields take their defaults).
func New[S Live](host Host[S], deps Deps, o Options) *Checkpointer[S] {
	o = o.withDefaults()
	keeper := checkpoint.NewKeeper(deps.Blobs, checkpoint.KeeperOptions{Records: o.Records, Dir: o.Dir, Sealer: o.Sealer, MaxBytes: o.MaxBytes, MaxTotal: o.MaxTotal})
	return &Checkpointer[S]{host: host, deps: deps, o: o, keeper: keeper}
}

// Shared reports whether paused sessions are shared by replicas: a
// paused session is then in the shared records only (Find), not in a
// replica's registry.
func (c *Checkpointer[S]) Shared() bool { return c.o.Shared && c.deps.Replicas }

// Load reads the records a previous server left, each a paused session
// from now on (none when Shared: those are looked up when called for).
func (c *Checkpointer[S]) Load() []*Paused[S] {
	if c.o.Shared {
		return nil
	}
	var out []*Paused[S]
	for _, rec := range c.keeper.Load(func(r checkpoint.Record) string { return c.deps.Storage(RecordKey(r)) }) {
		out = append(out, NewPaused[S](rec))
	}
	if len(out) > 0 {
		slog.Info("paused sessions found", "count", len(out))
	}
	return out
}

// Find reads owner's session idOrName from the shared records:
// checkpoint.ErrNoRecord when there is none.
func (c *Checkpointer[S]) Find(ctx context.Context, owner, idOrName string) (checkpoint.Record, error) {
	return c.keeper.Find(ctx, owner, idOrName)
}

// forget removes session k's record and checkpoint (closed for good).
func (c *Checkpointer[S]) forget(k Key, blob string) {
	c.keeper.Forget(c.deps.Storage(k), k.Owner, blob)
}

// Spare interpreters (internal/spares) are sessions with an empty
// workspace of their own and no owner; a restore takes one and Rename
// gives it the session's id and owner. A spare never ran anyone's code
// and serves exactly one session. They count against no session limit.

// OpenSpares opens the spare pool until stop is closed, with spares for
// the languages of the paused sessions a previous server left.
func (c *Checkpointer[S]) OpenSpares(stop <-chan struct{}, left []*Paused[S]) {
	cfg := spares.Config{Spares: c.o.Spares, MaxFork: c.o.MaxFork, MemoryLimit: c.o.MemoryLimit}
	c.spares.Open(cfg, spares.Callbacks[S]{
		Start: c.startSpare,
		Warm:  c.growReserve,
		Stop:  c.host.Terminate,
		Dead:  func(s S) bool { return s.Conn().IsDead() },
	}, stop)
	for _, p := range left {
		c.spares.Expect(p.rec.Language, p.rec.Bytes)
	}
}

// Spares is the spare pool, for a look at it; Close stops it.
func (c *Checkpointer[S]) Spares() *spares.Pool[S] { return &c.spares }

// Close stops the spare interpreters.
func (c *Checkpointer[S]) Close() { c.spares.Close() }

// startSpare launches a spare of lang and has it fault in rv.
func (c *Checkpointer[S]) startSpare(ctx context.Context, lang string, rv driver.Reserve) (S, error) {
	var zero S
	k := Key{"", "spare-" + rand.Text()[:12]}
	s, err := c.host.Launch(ctx, k, lang, "", true)
	if err != nil {
		return zero, err
	}
	if err := c.warm(ctx, s, rv); err != nil {
		c.host.Terminate(s)
		return zero, err
	}
	return s, nil
}

// growReserve has spare s fault in rv. A restore that takes s meanwhile
// waits for it (Runs); a spare that fails is killed, so that the pool
// drops it.
func (c *Checkpointer[S]) growReserve(ctx context.Context, s S, rv driver.Reserve) error {
	err := c.warm(ctx, s, rv)
	if err != nil {
		s.Conn().Kill()
	}
	return err
}

func (c *Checkpointer[S]) warm(ctx context.Context, s S, rv driver.Reserve) error {
	s.Runs().Lock()
	defer s.Runs().Unlock()
	return s.Conn().Warm(ctx, rv, c.o.Timeout, c.deps.KillGrace)
}
