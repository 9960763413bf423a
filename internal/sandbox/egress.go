package sandbox

import (
	"errors"
	"net"
)

// A run's network, when the operator allows any, goes through one owner
// outside the sandbox (package egress). The sandbox's network namespace
// stays empty but for loopback; the backend makes listening sockets inside
// it before the program starts (CaptureSpec) and hands them out of the
// sandbox (Capture). Whatever the program connects to lands on one of them:
//
//	program ── HTTP(S)_PROXY=127.0.0.1:ProxyPort ──▶ Capture.Proxy ─┐
//	program ── DNS query to 127.0.0.1:53 ──────────▶ Capture.DNS ───┼─▶ Egress (outside): policy,
//	program ── connect(name's stub address, port) ─▶ Capture.Ports ─┘   resolution, audit, upstream
//
// The program never reaches a resolver or a route out: a connection to
// anything else fails at once (no route, or refused).

// CaptureSpec says which sockets a backend makes in every isolated
// sandbox's network namespace. The zero value (or a nil pointer in backend
// options) makes none: the namespace keeps no network at all, as before.
type CaptureSpec struct {
	// ProxyPort is the port of the explicit HTTP proxy, on 127.0.0.1.
	ProxyPort int
	// Ports are the TCP ports captured on every address (0.0.0.0): a
	// program that ignores proxy variables connects to the stub address
	// the DNS answer gave and lands here.
	Ports []int
	// DNS asks for 127.0.0.1:53, UDP and TCP.
	DNS bool
	// Files are read-only files placed over paths in every sandbox (the
	// resolver configuration pointing at 127.0.0.1, the CA bundle that
	// trusts the proxy's interception CA).
	Files []Mount
}

// Enabled reports whether c asks for any socket.
func (c *CaptureSpec) Enabled() bool {
	return c != nil && (c.ProxyPort > 0 || len(c.Ports) > 0 || c.DNS)
}

// Capture is the set of listening sockets a backend made inside one
// sandbox's network namespace, now owned by the server. Each is nil when
// the CaptureSpec did not ask for it.
type Capture struct {
	Proxy  net.Listener
	DNS    net.PacketConn
	DNSTCP net.Listener
	// Ports maps a captured TCP port to its listener.
	Ports map[int]net.Listener
}

// Close closes every socket: later connections from the sandbox are
// refused at once (never left waiting in a backlog).
func (c *Capture) Close() error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, l := range []net.Listener{c.Proxy, c.DNSTCP} {
		if l != nil {
			errs = append(errs, l.Close())
		}
	}
	if c.DNS != nil {
		errs = append(errs, c.DNS.Close())
	}
	for _, l := range c.Ports {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// Egress is a run's network as the egress owner serves it (Spec.Egress).
type Egress interface {
	// Serve takes c (the run's sandbox's sockets) and serves it with the
	// run's policy until the run's binding is closed, then closes c. The
	// backend calls it once per run, as soon as both exist: at once for a
	// cold run, when the run is given to a warm runner otherwise.
	Serve(c *Capture)
}
