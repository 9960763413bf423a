package session

import (
	"errors"
	"log/slog"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/driver"
)

// CheckpointOptions configure pause, resume, fork and automatic
// checkpoints. They apply when Deps.Checkpoints is set. Zero values:
// MaxBytes 64 MiB, MaxTotal 1 GiB, Auto off, AutoMaxCost 1 s, Spares none,
// MaxFork 10, Timeout 60 s.
type CheckpointOptions struct {
	// Dir holds one record per paused session (and per live session with
	// an automatic checkpoint), so they survive a restart.
	Dir string
	// Records keep the records instead of Dir when set (pgstore.Records).
	Records checkpoint.Records
	// Shared: Records and the checkpoints are shared by replicas (a
	// database and an S3 bucket), with Deps.Claims their registry: a
	// paused session is held by no replica and any of them resumes it
	// (shared.go).
	Shared bool
	// Sealer encrypts checkpoints at rest; nil keeps them plain.
	Sealer *checkpoint.Sealer
	// MaxBytes bounds one session's checkpoint; MaxTotal all of them.
	MaxBytes, MaxTotal int64
	// Auto is the quiet period after a run before a live session is
	// checkpointed automatically (what a resume after a kill -9 restores).
	Auto time.Duration
	// AutoMaxCost: after an automatic checkpoint that took longer, the
	// next waits twenty times as long.
	AutoMaxCost time.Duration
	// IdleClose closes idle sessions instead of pausing them.
	IdleClose bool
	// Spares is how many started interpreters per language wait, idle and
	// empty, to receive a checkpoint (a resume or fork child needs no
	// interpreter start-up).
	Spares int
	// MaxFork bounds fork_session's count.
	MaxFork int
	// Timeout bounds one checkpoint or restore inside the interpreter.
	Timeout time.Duration
	// MemoryLimit is a sandbox's memory limit (0: none): the memory a
	// spare faults in ahead of a restore stays under a quarter of it.
	MemoryLimit int64
}

func (o CheckpointOptions) withDefaults() CheckpointOptions {
	if o.MaxBytes <= 0 {
		o.MaxBytes = 64 << 20
	}
	if o.MaxTotal <= 0 {
		o.MaxTotal = 1 << 30
	}
	if o.AutoMaxCost <= 0 {
		o.AutoMaxCost = time.Second
	}
	if o.MaxFork <= 0 {
		o.MaxFork = 10
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	return o
}

// ErrStateTooBig is a checkpoint refused because the state is over the
// per-session limit.
var ErrStateTooBig = driver.ErrStateTooBig

// ErrCheckpointsOff is returned by pause, resume and fork when the server
// keeps no checkpoints.
var ErrCheckpointsOff = errors.New("session checkpoints are not enabled on this server")

// Record is what is kept about a session's latest checkpoint
// (checkpoint.Record).
type Record = checkpoint.Record

func recKey(r Record) key { return key{r.Owner, r.ID} }

// loadRecords reads the records a previous server left: each is a paused
// session from now on.
func (m *Manager) loadRecords() {
	for _, rec := range m.keeper.Load(func(r Record) string { return storageName(recKey(r)) }) {
		m.paused[recKey(rec)] = &pausedSession{rec: rec}
	}
	if len(m.paused) > 0 {
		slog.Info("paused sessions found", "count", len(m.paused))
	}
}

// forget removes session k's record and checkpoint (closed for good).
func (m *Manager) forget(k key, blob string) {
	if m.checkpoints() {
		m.keeper.Forget(storageName(k), k.owner, blob)
	}
}

// checkpoints reports whether this Manager keeps checkpoints.
func (m *Manager) checkpoints() bool { return m.keeper != nil }

// CheckpointsEnabled reports whether sessions can be paused, resumed and
// forked here.
func (m *Manager) CheckpointsEnabled() bool { return m != nil && m.checkpoints() }
