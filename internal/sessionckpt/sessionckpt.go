// Package sessionckpt keeps the checkpoints of interpreter sessions: it
// pauses a live session (checkpoints its interpreter state and workspace,
// then stops it), resumes a paused one into a new or spare interpreter,
// forks a session into new ones, and checkpoints live sessions
// automatically after a quiet period, so that a server killed outright
// resumes them from there.
//
// Which sessions exist, their limits and their logs are the session
// manager's (package session): a Checkpointer reaches the manager only
// through Host and a session only through Live, so the registry of live
// and paused sessions, with its one lock, stays in one place. Records and
// checkpoints are kept by a checkpoint.Keeper; with Options.Shared they are
// shared by replicas (shared.go).
package sessionckpt

import (
	"errors"
	"fmt"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/driver"
	"github.com/codexec/codexec/internal/errcode"
)

// Options configure pause, resume, fork and automatic checkpoints. Zero
// values: MaxBytes 64 MiB, MaxTotal 1 GiB, Auto off, AutoMaxCost 1 s,
// Spares none, MaxFork 10, Timeout 60 s.
type Options struct {
	// Dir holds one record per paused session (and per live session with
	// an automatic checkpoint), so they survive a restart.
	Dir string
	// Records keep the records instead of Dir when set (pgstore.Records).
	Records checkpoint.Records
	// Shared: Records and the checkpoints are shared by replicas (a
	// database and an S3 bucket), with Host's claims their registry: a
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

func (o Options) withDefaults() Options {
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

// ErrHeldElsewhere is a paused session another replica claimed (to
// resume or close it) first.
var ErrHeldElsewhere = errcode.New(errcode.Busy, "another replica resumed the session meanwhile (retry: the call goes there)")

// ErrBadCount is a fork count outside 1..MaxFork.
var ErrBadCount = errors.New("bad fork count")

// ErrSecrets refuses to fork a session holding values that look like
// secrets without the caller's say-so.
type ErrSecrets struct{ Names []string }

func (e *ErrSecrets) Error() string {
	return fmt.Sprintf("the session holds values whose names look like secrets (%v): pass allow_secrets: true to copy them into the children", e.Names)
}

// StatusPaused is the status of a session that has no process and
// resumes from its checkpoint on its next use.
const StatusPaused = "paused"
