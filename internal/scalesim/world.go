package scalesim

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/codexec/codexec/internal/sessionreg"
)

// epoch is the virtual clock's zero (millisecond times, as PostgreSQL keeps
// them to the microsecond).
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

type event struct {
	at  time.Duration
	seq uint64
	fn  func()
}

type queue []event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int)         { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)           { *q = append(*q, x.(event)) }
func (q *queue) Pop() any             { o := *q; e := o[len(o)-1]; *q = o[:len(o)-1]; return e }
func (q *queue) next() event          { return heap.Pop(q).(event) }
func (q *queue) add(e event)          { heap.Push(q, e) }
func (q queue) peekAt() time.Duration { return q[0].at }

// replica is one codexec process (one pod incarnation).
type replica struct {
	sessionreg.Replica
	alive    bool               // the process runs
	draining bool               // SIGTERM received: /readyz 503, tool calls refused
	proxyUp  bool               // HAProxy's view
	okRun    int                // consecutive passed checks
	failRun  int                // consecutive failed checks
	mcp      int                // open MCP sessions (HAProxy leastconn counts their connections)
	local    map[string]*client // sessions it holds, with their client
	stopped  bool               // drained or killed: its sessions may be lost
}

// client is one slot: the current agent task's MCP and codexec sessions.
type client struct {
	mcpID string
	mcpOn *replica // the replica that issued mcpID (nil: none open)
	stuck *replica // HAProxy's stick table entry for mcpID
	sess  string   // codexec session id ("" when it must start one)
	held  *replica // the replica holding sess (nil: none, or it stopped)
	gen   int      // bumped for each codexec session, to drop stale closes
	// lastCall is when the session's last call was answered; paused is
	// set while it is paused (Config.Checkpoints).
	lastCall time.Duration
	paused   *pausedAt
}

// world is one run's state.
type world struct {
	cfg   Config
	rng   *rand.Rand
	reg   *Counting
	audit sessionreg.Registry // uncounted view, for the audit
	ctx   context.Context

	now      time.Duration
	seq      uint64
	q        queue
	replicas []*replica // every incarnation, in start order
	byAddr   map[string]*replica
	// stickEntries counts HAProxy's stick table entries (one per MCP
	// session opened; they expire after an hour, longer than a run). Each
	// client keeps its own entry, client.stuck.
	stickEntries int
	clients      []*client
	nextID       int

	res     Result
	ph      *Phase
	opsBase map[string]int
	killed  *replica
	killAt  time.Duration

	// stored: sessions with a checkpoint in the bucket, storedBytes their
	// size (Config.CheckpointBytes each).
	stored      map[string]bool
	storedBytes int64
}

func (w *world) at(d time.Duration, fn func()) {
	w.seq++
	w.q.add(event{at: w.now + d, seq: w.seq, fn: fn})
}

func (w *world) clock() time.Time { return epoch.Add(w.now) }

func (w *world) id(prefix string) string {
	w.nextID++
	return fmt.Sprintf("%s%07d", prefix, w.nextID)
}

func (w *world) exp(mean time.Duration) time.Duration {
	return time.Duration(w.rng.ExpFloat64() * float64(mean)).Round(time.Millisecond)
}

func (w *world) uniform(d time.Duration) time.Duration {
	return time.Duration(w.rng.Int64N(int64(d/time.Millisecond)+1)) * time.Millisecond
}

func (w *world) violate(format string, args ...any) {
	if len(w.res.Violations) < 20 {
		w.res.Violations = append(w.res.Violations, fmt.Sprintf("%v: ", w.now)+fmt.Sprintf(format, args...))
	}
}

func (w *world) fail(kind string) {
	if w.ph.Failed == nil {
		w.ph.Failed = map[string]int{}
	}
	w.ph.Failed[kind]++
}

// Run simulates cfg against reg (an empty registry; the simulation claims
// fresh ids) and returns what happened. Only the periodic audit
// (Config.Audit) reads reg without counting. It stops at the first broken
// invariant (Result.Violations).
func Run(ctx context.Context, cfg Config, reg sessionreg.Registry) (Result, error) {
	w := &world{
		cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5ca1e)), reg: &Counting{Inner: reg}, audit: reg, ctx: ctx,
		byAddr: map[string]*replica{}, stored: map[string]bool{},
	}
	w.res.DetectionBound = cfg.Lease + cfg.Sweep
	w.res.CheckpointBytes = cfg.CheckpointBytes
	w.beginPhase(PhaseWarmup)
	for range cfg.Replicas {
		w.startReplica(true)
	}
	for range cfg.Sessions {
		c := &client{}
		w.clients = append(w.clients, c)
		w.newTask(c)
		w.at(w.exp(w.callGap()), func() { w.call(c) })
		w.at(w.exp(cfg.Reconnect), func() { w.reconnect(c) })
	}
	w.at(cfg.Warmup, func() { w.beginPhase(PhaseSteady) })
	w.at(cfg.Warmup+cfg.Steady, w.rollingUpdate)
	if cfg.Audit > 0 {
		w.at(cfg.Audit, w.auditTick)
	}
	for w.q.Len() > 0 && w.res.Violations == nil {
		e := w.q.next()
		w.now = e.at
		e.fn()
		if w.ph.Name == PhaseNodeLoss && w.now >= w.killAt+cfg.After {
			break
		}
		if err := ctx.Err(); err != nil {
			return w.res, err
		}
	}
	w.endPhase()
	w.res.StickEntries = w.stickEntries
	return w.res, nil
}

func (w *world) callGap() time.Duration { return time.Duration(float64(time.Second) / w.cfg.CallRate) }

func (w *world) beginPhase(name string) {
	if w.ph != nil {
		w.endPhase()
	}
	w.res.Phases = append(w.res.Phases, Phase{Name: name, Start: w.now})
	w.ph = &w.res.Phases[len(w.res.Phases)-1]
	w.opsBase = w.reg.Counts()
}

func (w *world) endPhase() {
	w.ph.End = w.now
	w.ph.Ops = map[string]int{}
	for op, n := range w.reg.Counts() {
		if d := n - w.opsBase[op]; d > 0 {
			w.ph.Ops[op] = d
		}
	}
}
