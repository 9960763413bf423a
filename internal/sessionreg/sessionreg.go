// Package sessionreg is the registry of live sessions: which replica owns
// which session id, and which replicas are alive. A replica renews its lease
// with Heartbeat; a replica whose lease ran out (Expired) or that stops
// (drains) has its sessions marked lost (MarkLost), so a call for one of
// them answers "session lost (replica X stopped at T)" instead of silently
// starting a new session elsewhere.
//
// Two implementations share the contract of Registry: Memory, for the
// embedded single-process server (every session is its own), and a shared
// database for replicas. Times are the callers' clocks: replicas sharing a
// registry need clocks that agree to well within the lease.
package sessionreg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/codexec/codexec/internal/errcode"
)

// Replica is one server process: its id and the address other replicas
// reach it at (for forwarding a call to a session it owns).
type Replica struct {
	ID   string
	Addr string
}

// Owner is the registry's record of a session.
type Owner struct {
	SessionID string
	Replica   Replica
	ClaimedAt time.Time
	// LostAt is set once the owner stopped or its lease ran out; the
	// session is gone for good.
	LostAt *time.Time
	// PausedAt is set while the session is paused: no replica holds it
	// (Replica is the one that paused it), its checkpoint is in the shared
	// store, and the first replica to Claim it resumes it.
	PausedAt *time.Time
	// Label is what the claim said about the session.
	Label Label
}

// Label describes a session for listings made by other replicas, which
// show it from the registry alone when its replica stopped or does not
// answer.
type Label struct {
	Kind     string // "session", "context", or "run" (a background run, package runs)
	Language string
	Name     string
	// Of is set on the record of a context's name: the id of the context
	// it names. A session's (or context's) own id has Of "".
	Of string
}

// Lost returns a *LostError when the session is lost, else nil.
func (o Owner) Lost() error {
	if o.LostAt == nil {
		return nil
	}
	return &LostError{SessionID: o.SessionID, Replica: o.Replica.ID, At: *o.LostAt}
}

// LostError is a call for a session whose replica is gone.
type LostError struct {
	SessionID string
	Replica   string
	At        time.Time
}

func (e *LostError) Error() string {
	return fmt.Sprintf("session lost (replica %s stopped at %s)", e.Replica, e.At.UTC().Format(time.RFC3339))
}

// ErrorCode says a lost session is SESSION_LOST to callers.
func (e *LostError) ErrorCode() string { return errcode.SessionLost }

// Standing is where a session stands as one replica sees it.
type Standing int

const (
	// StandingNone: not registered, or lost.
	StandingNone Standing = iota
	// StandingHere: the replica asking holds it.
	StandingHere
	// StandingElsewhere: another replica holds it.
	StandingElsewhere
	// StandingPaused: no replica holds it; the first Claim takes it.
	StandingPaused
)

// StandingOf is where o stands for replica self.
func StandingOf(o Owner, self string) Standing {
	switch {
	case o.LostAt != nil:
		return StandingNone
	case o.PausedAt != nil:
		return StandingPaused
	case o.Replica.ID == self:
		return StandingHere
	}
	return StandingElsewhere
}

// ErrNotFound is Owner's answer for a session id never claimed or released.
var ErrNotFound = errors.New("session not registered")

// ErrClaimed is Claim's answer for a session id another replica owns (or
// owned: a lost session cannot be claimed again).
var ErrClaimed = errcode.New(errcode.InvalidParams, "session id already claimed by another replica")

// Registry is the session registry. All methods are safe for concurrent
// use, by many replicas for a shared registry.
type Registry interface {
	// Heartbeat records r as alive at at (creating or renewing its lease
	// and updating its address).
	Heartbeat(ctx context.Context, r Replica, at time.Time) error
	// Claim records o.Replica as the owner of o.SessionID at o.ClaimedAt,
	// with o.Label (o.LostAt and o.PausedAt are ignored). Claiming again
	// by the same replica is a no-op; another replica's or a lost session
	// is ErrClaimed. A paused session is taken by the first claim, by any
	// replica, atomically: of replicas racing to resume it one wins.
	Claim(ctx context.Context, o Owner) error
	// Pause marks sessionID paused at at when replicaID holds it and it is
	// neither lost nor paused; otherwise it does nothing.
	Pause(ctx context.Context, sessionID, replicaID string, at time.Time) error
	// Owner returns the record of sessionID, or ErrNotFound.
	Owner(ctx context.Context, sessionID string) (Owner, error)
	// Release forgets sessionID when replicaID owns it and it is neither
	// lost nor paused (the session ended normally); otherwise it does nothing, so a replica
	// closing its sessions after MarkLost keeps them answering "lost".
	Release(ctx context.Context, sessionID, replicaID string) error
	// MarkLost marks every session replicaID owns as lost at at (paused
	// ones are nobody's and stay paused), drops its lease, and returns how
	// many sessions it marked.
	MarkLost(ctx context.Context, replicaID string, at time.Time) (int, error)
	// List returns the records whose session id starts with prefix, lost
	// ones included, in byte order of the id.
	List(ctx context.Context, prefix string) ([]Owner, error)
	// ForgetLost drops the records of sessions marked lost before before
	// (after that, a call for one is ErrNotFound) and returns how many.
	ForgetLost(ctx context.Context, before time.Time) (int, error)
	// Expired lists the replicas whose last heartbeat is older than lease
	// as of now, by id.
	Expired(ctx context.Context, now time.Time, lease time.Duration) ([]Replica, error)
}
