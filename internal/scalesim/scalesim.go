// Package scalesim simulates codexec replicas behind HAProxy sharing one
// session registry, on a virtual clock, to size a deployment on paper and
// check its invariants with a program. It drives a real
// sessionreg.Registry (the in-memory one, or the PostgreSQL one for a small
// run) through Counting, so the registry load it reports is what the real
// registry code receives; the replicas, the proxy and the clients are the
// model, described on Config and in docs/scaling.md.
//
// The model, in short: each client slot runs one agent task at a time, an
// MCP session plus one codexec session; when the task ends another starts,
// so the number of live sessions stays Config.Sessions. HAProxy sticks an
// MCP session to the replica that issued it (leastconn for new ones,
// /readyz checks with inter/fall/rise); a request whose stuck replica is
// down goes elsewhere, gets 404 and the client opens a new MCP session
// there. A call for a codexec session held by another replica is forwarded
// once, to the owner the registry names; the owner never forwards again. A
// draining replica refuses calls and marks its sessions lost when it exits;
// a killed one is found by a survivor when its lease expires.
//
// Run is deterministic for a Config (seeded) and single-threaded.
package scalesim

import (
	"time"
)

// Config is the set of assumptions of one simulation run.
type Config struct {
	Seed     uint64
	Replicas int // replicas before and after the rolling update
	Sessions int // live codexec sessions (client slots), constant

	CallRate    float64       // tool calls per session per second (Poisson)
	SessionLife time.Duration // mean life of a session (exponential)
	Reconnect   time.Duration // mean time between a client's reconnects (new MCP session)
	IdleTimeout time.Duration // a session whose close failed is closed by its owner after this
	Retry       time.Duration // a client retries a failed call after this
	ExecShare   float64       // share of calls that run code (one history append each)
	ScriptShare float64       // share of calls that run a saved script (one script read each)

	Heartbeat   time.Duration // lease renewal interval of each replica
	Lease       time.Duration // a replica silent this long is expired
	Sweep       time.Duration // each replica checks for expired replicas this often
	ForgetEvery time.Duration // each replica drops old lost records this often
	LostKeep    time.Duration // how long a lost session's record answers "lost"

	CheckInter time.Duration // HAProxy health check interval
	Fall, Rise int           // HAProxy consecutive failed/passed checks to mark down/up

	PreStop time.Duration // pod preStop sleep before SIGTERM (still serving)
	Drain   time.Duration // SIGTERM to exit: running calls finish (at most the grace)
	Startup time.Duration // a new pod's start until it answers /readyz
	// LostAtSigterm marks a draining replica's sessions lost when the drain
	// starts (its calls are refused from then on anyway) rather than when
	// it exits, so their clients hear "session lost" and move on sooner.
	LostAtSigterm bool

	Warmup time.Duration // before the steady window (not reported)
	Steady time.Duration // steady window, then the rolling update
	Settle time.Duration // after the update, before the node loss
	After  time.Duration // observed after the node loss

	// Audit is the interval of the full consistency check (registry against
	// the replicas' sessions); 0 disables it.
	Audit time.Duration

	// Checkpoints: paused sessions are shared by the replicas (PostgreSQL
	// records, S3 checkpoints; checkpoints.go). A session idle for
	// IdleTimeout is paused; a draining replica pauses its sessions.
	Checkpoints bool
	// BreakShare is the share of calls after which the agent takes a break
	// (mean Break, exponential) and comes back on a new connection.
	BreakShare float64
	Break      time.Duration
	// Auto is the quiet period after a call before an automatic
	// checkpoint (0: none); CheckpointBytes the size of each checkpoint.
	Auto            time.Duration
	CheckpointBytes int64
}

// WithCheckpoints is Default with shared paused sessions: one call in 50
// is followed by a break of 10 minutes on average (an agent waiting for
// its user), sessions idle for 5 minutes are paused (most breaks pause
// them), automatic checkpoints after 10 s of quiet (the server's default),
// 1 MB checkpoints; a 20-minute warm-up reaches the steady mix of live and
// paused sessions.
func WithCheckpoints() Config {
	c := Default()
	c.Checkpoints, c.BreakShare, c.Break, c.IdleTimeout = true, 0.02, 10*time.Minute, 5*time.Minute
	c.Auto, c.CheckpointBytes = 10*time.Second, 1<<20
	c.Warmup = 20 * time.Minute
	return c
}

// Default is the configuration of docs/scaling.md: 10,000 sessions over 20
// replicas.
func Default() Config {
	return Config{
		Seed: 1, Replicas: 20, Sessions: 10000,
		CallRate: 0.1, SessionLife: 10 * time.Minute, Reconnect: time.Hour, IdleTimeout: 15 * time.Minute,
		Retry: time.Second, ExecShare: 0.8, ScriptShare: 0.1,
		Heartbeat: 5 * time.Second, Lease: 15 * time.Second, Sweep: 5 * time.Second,
		ForgetEvery: time.Minute, LostKeep: time.Hour,
		CheckInter: 2 * time.Second, Fall: 2, Rise: 2,
		PreStop: 5 * time.Second, Drain: 30 * time.Second, Startup: 10 * time.Second,
		Warmup: time.Minute, Steady: 5 * time.Minute, Settle: 2 * time.Minute, After: 3 * time.Minute,
		Audit: time.Minute,
	}
}

// Phase names, in order.
const (
	PhaseWarmup   = "warm-up"
	PhaseSteady   = "steady"
	PhaseRolling  = "rolling update"
	PhaseSettle   = "settle"
	PhaseNodeLoss = "node loss"
)

// Failure kinds of a call, as Phase.Failed counts them. None of them is
// answered as a success.
const (
	FailProxy       = "proxy 503 (replica dead, not yet marked down)"
	FailDraining    = "refused (replica draining)"
	FailUnreachable = "owner unreachable (dead, not yet marked lost)"
	FailNoServer    = "no replica up"
)

// Phase is what happened during one stretch of the run.
type Phase struct {
	Name       string
	Start, End time.Duration

	Calls     int            // tool calls sent (retries included)
	Succeeded int            // answered with a result
	Forwarded int            // of Succeeded, executed by another replica than the one the client reached
	Failed    map[string]int // by failure kind
	Reinits   int            // MCP sessions reopened after a 404 (stuck replica gone)
	Lost      int            // sessions marked lost (MarkLost's count)
	LostTold  int            // calls answered "session lost (replica X stopped at T)"
	Started   int            // codexec sessions started (claims)

	Ops            map[string]int // registry operations (Counting)
	HistoryAppends int
	ScriptReads    int

	CheckpointCounts // Config.Checkpoints
}

// Seconds is the phase's length in seconds.
func (p Phase) Seconds() float64 { return (p.End - p.Start).Seconds() }

// StoreStatements is the PostgreSQL statements the phase cost: registry
// operations by RoundTrips, plus one per history append and script read,
// plus the checkpoint records'.
func (p Phase) StoreStatements() int {
	n := p.HistoryAppends + p.ScriptReads + p.RecordStatements
	for op, c := range p.Ops {
		n += c * RoundTrips[op]
	}
	return n
}

// Result is the outcome of Run.
type Result struct {
	Phases []Phase
	// MaxHops is the most forwarding hops any call took.
	MaxHops int
	// Detection is the time from the kill to a survivor marking the killed
	// replica's sessions lost; DetectionBound is Lease + Sweep.
	Detection, DetectionBound time.Duration
	// HeldAtKill is how many sessions the killed replica held.
	HeldAtKill int
	// StickEntries is the HAProxy stick table's size at the end (entries
	// live an hour; the run is shorter).
	StickEntries int
	// AuditReads is how many Owner calls the audit made (not in Phase.Ops).
	AuditReads int
	// PeakCheckpointBytes is the most the bucket's checkpoints held at once
	// (what CODEXEC_CHECKPOINT_MAX_TOTAL must allow; Config.Checkpoints).
	PeakCheckpointBytes int64
	// CheckpointBytes is Config.CheckpointBytes (for the report).
	CheckpointBytes int64
	// Violations lists every broken invariant; empty when all held.
	Violations []string
}

// Phase returns the phase called name.
func (r Result) Phase(name string) Phase {
	for _, p := range r.Phases {
		if p.Name == name {
			return p
		}
	}
	return Phase{}
}
