// Package replicas is what one codexec replica does among others sharing a
// session registry (sessionreg): it claims the sessions and contexts it
// starts and releases them when they end, renews its lease (Heartbeat)
// while serving, marks the sessions of replicas whose lease ran out as
// lost, marks its own lost when it drains, routes a request for a session
// another replica holds to that replica over the internal hop (hop.go, which
// also documents its wire protocol), and finds what other replicas hold of
// one principal for the listings (Holdings).
//
// Registry keys are scoped by principal (tenant.Tag): a session id or
// context name exists once per principal, as in session.Manager, so two
// principals using the same caller-chosen id never meet here either.
//
// Timing: a replica heartbeats every Lease/3 and sweeps for expired leases
// as often, so the sessions of a replica that died without draining are
// marked lost at most Lease + Lease/3 after it died (its last heartbeat was
// at most Lease/3 before its death, and the first sweep after the lease
// ran out comes at most Lease/3 later). Clocks of the replicas must agree
// to well within the lease.
package replicas

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

// opTimeout bounds one registry operation made outside a caller's context
// (heartbeat, sweep, release).
const opTimeout = 5 * time.Second

// dialTimeout bounds connecting to another replica for a forwarded call.
const dialTimeout = 5 * time.Second

// Options configure a Set.
type Options struct {
	Self     sessionreg.Replica
	Registry sessionreg.Registry
	// Secret keys the HMAC of the internal hop; the same on every replica.
	Secret string
	// Lease: see the package comment.
	Lease time.Duration
	// Client makes the hop's requests; nil: one that bounds the dial by
	// dialTimeout and nothing else (a forwarded run lasts as long as the
	// run).
	Client *http.Client
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

// Set is this replica among the others. Safe for concurrent use.
type Set struct {
	o      Options
	mu     sync.Mutex
	self   sessionreg.Replica // o.Self, with the address SetAddr gave
	nonces nonceCache         // of the hop requests accepted (hop.go)
}

// New returns the Set of o.Self.
func New(o Options) *Set {
	if o.Client == nil {
		// No overall timeout (a forwarded run lasts as long as the run),
		// but a bounded dial: a dead pod's address may swallow packets.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
		o.Client = &http.Client{Transport: tr}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Set{o: o, self: o.Self, nonces: nonceCache{max: MaxNonces}}
}

// Self is this replica.
func (s *Set) Self() sessionreg.Replica {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.self
}

// SetAddr sets this replica's address when Options had none (it is known
// once the listener is bound); call it before Start.
func (s *Set) SetAddr(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.self.Addr == "" {
		s.self.Addr = addr
	}
}

// Key is the registry key of idOrName (a session id or a context name) of
// principal p.
func Key(p, idOrName string) string {
	return tenant.Tag(p) + "/" + idOrName
}

// Claim records this replica as the holder of principal p's idOrName,
// described by l.
func (s *Set) Claim(ctx context.Context, p, idOrName string, l sessionreg.Label) error {
	return s.o.Registry.Claim(ctx, sessionreg.Owner{SessionID: Key(p, idOrName), Replica: s.Self(), ClaimedAt: s.o.Now(), Label: l})
}

// Record returns the registry's record of principal p's idOrName, with
// SessionID as p gave it, or an error wrapping sessionreg.ErrNotFound.
func (s *Set) Record(ctx context.Context, p, idOrName string) (sessionreg.Owner, error) {
	o, err := s.o.Registry.Owner(ctx, Key(p, idOrName))
	o.SessionID = idOrName
	return o, err
}

// Holdings returns the records of principal p's sessions and context names
// that other replicas hold or held (lost ones included) and the paused ones
// (which no replica holds, whichever paused them), by id, with SessionID
// the id or name as p gave it. One registry query.
func (s *Set) Holdings(ctx context.Context, p string) ([]sessionreg.Owner, error) {
	prefix := Key(p, "")
	all, err := s.o.Registry.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	self := s.Self().ID
	out := all[:0]
	for _, o := range all {
		if o.Replica.ID != self || o.PausedAt != nil {
			o.SessionID = strings.TrimPrefix(o.SessionID, prefix)
			out = append(out, o)
		}
	}
	return out, nil
}

// Release forgets principal p's idOrName when this replica holds it and it
// is not lost. A failure is logged: the record then stays until this
// replica is marked lost, which only makes a later call answer "lost"
// instead of "not found".
func (s *Set) Release(p, idOrName string) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := s.o.Registry.Release(ctx, Key(p, idOrName), s.Self().ID); err != nil {
		slog.Warn("session registry: release failed", "session", idOrName, "err", err)
	}
}

// Pause marks principal p's idOrName, which this replica holds, paused:
// held by no replica until one claims it to resume it. A failure is
// logged: the claim then stays this replica's, and calls are forwarded
// here, where the session is resumed.
func (s *Set) Pause(p, idOrName string) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := s.o.Registry.Pause(ctx, Key(p, idOrName), s.Self().ID, s.o.Now()); err != nil {
		slog.Warn("session registry: pause failed", "session", idOrName, "err", err)
	}
}

// Standing is where principal p's idOrName stands for this replica.
func (s *Set) Standing(ctx context.Context, p, idOrName string) (sessionreg.Standing, error) {
	o, err := s.o.Registry.Owner(ctx, Key(p, idOrName))
	if errors.Is(err, sessionreg.ErrNotFound) {
		return sessionreg.StandingNone, nil
	}
	if err != nil {
		return sessionreg.StandingNone, err
	}
	return sessionreg.StandingOf(o, s.Self().ID), nil
}

// Route says where a call of principal p for idOrName goes: ok false when
// this replica serves it (it holds it, nobody does, or it is paused), else
// the live replica holding it. A lost session is a *sessionreg.LostError.
func (s *Set) Route(ctx context.Context, p, idOrName string) (owner sessionreg.Replica, ok bool, err error) {
	o, err := s.o.Registry.Owner(ctx, Key(p, idOrName))
	if errors.Is(err, sessionreg.ErrNotFound) {
		return sessionreg.Replica{}, false, nil
	}
	if err != nil {
		return sessionreg.Replica{}, false, err
	}
	if err := o.Lost(); err != nil {
		return sessionreg.Replica{}, false, err
	}
	if o.Replica.ID == s.Self().ID || o.PausedAt != nil {
		// Held here, or paused: this replica resumes it (the session
		// Manager claims it first, and forwards when another won).
		return sessionreg.Replica{}, false, nil
	}
	return o.Replica, true, nil
}

// Run heartbeats and sweeps expired replicas every Lease/3 until ctx
// ends. The first heartbeat is made by Start.
func (s *Set) Run(ctx context.Context) {
	tick := time.NewTicker(s.o.Lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s.beat(ctx)
		s.Sweep(ctx)
	}
}

// Start records this replica's first heartbeat: it fails when the
// registry cannot be reached, so a replica that could never be found does
// not serve.
func (s *Set) Start(ctx context.Context) error {
	if err := s.o.Registry.Heartbeat(ctx, s.Self(), s.o.Now()); err != nil {
		return fmt.Errorf("replica %s: first heartbeat: %w", s.Self().ID, err)
	}
	slog.Info("replica registered", "replica", s.Self().ID, "addr", s.Self().Addr, "lease", s.o.Lease)
	return nil
}

func (s *Set) beat(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := s.o.Registry.Heartbeat(ctx, s.Self(), s.o.Now()); err != nil {
		slog.Warn("session registry: heartbeat failed", "replica", s.Self().ID, "err", err)
	}
}

// Sweep marks the sessions of every other replica whose lease ran out as
// lost, at the time of the sweep, and returns how many replicas it found.
func (s *Set) Sweep(ctx context.Context) int {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	now := s.o.Now()
	dead, err := s.o.Registry.Expired(ctx, now, s.o.Lease)
	if err != nil {
		slog.Warn("session registry: lease sweep failed", "err", err)
		return 0
	}
	found := 0
	for _, r := range dead {
		if r.ID == s.Self().ID {
			// Its own heartbeats failed (the registry was unreachable): it
			// is alive, and renews the lease at its next beat.
			continue
		}
		found++
		n, err := s.o.Registry.MarkLost(ctx, r.ID, now)
		if err != nil {
			slog.Warn("session registry: marking a dead replica's sessions lost failed", "replica", r.ID, "err", err)
			continue
		}
		slog.Warn("replica stopped heartbeating: its sessions are lost", "replica", r.ID, "sessions", n)
	}
	return found
}

// Stop marks every session of this replica lost now and drops its lease:
// the last step of a drain, after running calls finished.
func (s *Set) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	n, err := s.o.Registry.MarkLost(ctx, s.Self().ID, s.o.Now())
	if err != nil {
		slog.Error("session registry: marking this replica's sessions lost failed; survivors will after the lease", "err", err)
		return
	}
	slog.Info("replica stopped: its sessions are marked lost", "replica", s.Self().ID, "sessions", n)
}
