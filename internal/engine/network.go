package engine

import (
	"context"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/tenant"
)

// NetworkHost is Result.NetworkMode for a run that had network in a mode
// without isolation (subprocess): the program used the host's network and
// nothing filtered or recorded it.
const NetworkHost = "host"

// runNetwork is one run's network, attached in one place (attachNetwork)
// for every kind of run: the binding that serves its sandbox's captured
// sockets with the run's policy, and the variables that point its
// programs at the proxy.
type runNetwork struct {
	b *egress.Binding
	// env are the proxy, CA bundle and placeholder variables of the run.
	env []string
	// host: the backend does not isolate; the run has the host's network.
	host bool
}

// attachNetwork binds a run with policy p, owned by ctx's principal, to
// the egress service. A run with no network gets nil (the backend closes
// its captured sockets: every connection is refused at once); so does a
// run in a mode without isolation, but marked as having the host network.
func (e *Engine) attachNetwork(ctx context.Context, id string, p egress.Policy) *runNetwork {
	if p.None() {
		return nil
	}
	if !e.backend.Isolated() {
		return &runNetwork{host: true}
	}
	principal := tenant.From(ctx)
	b := e.egress.Bind(id, principal, p)
	b.TraceIn(ctx)
	return &runNetwork{b: b, env: e.egress.Env(principal, p)}
}

// egressOf is n as the sandbox spec takes it: an untyped nil without a
// binding, so that the backend closes the captured sockets.
func (n *runNetwork) egressOf() sandbox.Egress {
	if n == nil || n.b == nil {
		return nil
	}
	return n.b
}

// environ is n's variables (none without network).
func (n *runNetwork) environ() []string {
	if n == nil {
		return nil
	}
	return n.env
}

// finish records n's audit in res and closes the binding (its open
// connections end with the run).
func (n *runNetwork) finish(res *Result) {
	if n == nil {
		return
	}
	if n.host {
		res.NetworkMode = NetworkHost
		return
	}
	n.b.Close() // first: the audit is final once the binding is closed
	res.Network = n.b.Record()
}

// NetworkDelta is the audit of what happened between two records of one
// binding (a session's run): per destination, the connections and bytes
// added since prev. Destinations unchanged since prev are left out.
func NetworkDelta(prev, now []egress.Entry) []egress.Entry {
	type key struct {
		host    string
		port    int
		allowed bool
		reason  string
	}
	seen := make(map[key]egress.Entry, len(prev))
	for _, p := range prev {
		seen[key{p.Host, p.Port, p.Allowed, p.Reason}] = p
	}
	out := []egress.Entry{}
	for _, n := range now {
		p := seen[key{n.Host, n.Port, n.Allowed, n.Reason}]
		if n.Connections == p.Connections && n.BytesSent == p.BytesSent && n.BytesReceived == p.BytesReceived {
			continue
		}
		n.Connections -= p.Connections
		n.BytesSent -= p.BytesSent
		n.BytesReceived -= p.BytesReceived
		out = append(out, n)
	}
	return out
}

// Network is a session interpreter's network: bound when the interpreter
// starts (BindNetwork, StartRequest.Network) and kept for its life, its
// policy replaced whole by SetPolicy. Its methods are safe on nil (no
// network).
type Network struct {
	n *runNetwork
}

// BindNetwork binds a session interpreter named id, owned by principal,
// with policy p. Where the backend isolates and the server has any egress
// ceiling, every interpreter is bound, even with no network (all denied):
// its policy can be replaced later, which a sandbox whose captured sockets
// were closed could never take. A spare interpreter (no owner yet) is
// bound with an empty principal, which no credential names: the session
// that adopts it gets its policy later (SetPolicy), never another
// principal's credentials. Without isolation the interpreter has the
// host's network (Host); nil: egress is off.
func (e *Engine) BindNetwork(principal, id string, p egress.Policy) *Network {
	switch {
	case !e.backend.Isolated():
		return &Network{&runNetwork{host: true}}
	case !e.egress.Enabled():
		return nil
	}
	// The variables are those of the principal's whole ceiling, not of p:
	// they are fixed when the interpreter starts, and a policy given later
	// must find the proxy, the CA bundle (node reads only its variable) and
	// the placeholders there. They grant nothing: the binding decides.
	return &Network{&runNetwork{b: e.egress.Bind(id, principal, p), env: e.egress.Env(principal, e.egress.Ceiling(principal))}}
}

// SetPolicy replaces the network's policy whole: new connections get p,
// open ones go on.
func (n *Network) SetPolicy(p egress.Policy) {
	if n != nil && n.n.b != nil {
		n.n.b.SetPolicy(p)
	}
}

// TraceIn records the interpreter's connections from now on as events of
// ctx's span (the send that runs code in it); see egress.Binding.TraceIn.
func (n *Network) TraceIn(ctx context.Context) {
	if n != nil && n.n.b != nil {
		n.n.b.TraceIn(ctx)
	}
}

// Record is the audit so far (nil without a binding).
func (n *Network) Record() []egress.Entry {
	if n == nil || n.n.b == nil {
		return nil
	}
	return n.n.b.Record()
}

// Host reports whether the interpreter has the host's network
// (a mode without isolation).
func (n *Network) Host() bool { return n != nil && n.n.host }

// Close ends the binding and its open connections.
func (n *Network) Close() {
	if n != nil && n.n.b != nil {
		n.n.b.Close()
	}
}
