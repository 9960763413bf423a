package egress

import (
	"context"
	"errors"
	"net"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/codexec/codexec/internal/sandbox"
)

// Binding is one run's network: its policy, the sandbox sockets it
// serves, its open connections, limits and audit. It implements
// sandbox.Egress. A nil *Binding serves nothing: Serve closes the capture
// (connections refused at once).
type Binding struct {
	s         *Service
	runID     string
	principal string
	limits    Limits
	ctx       context.Context
	cancel    context.CancelFunc
	names     *stubNames

	mu       sync.Mutex
	policy   Policy
	captures []*sandbox.Capture
	conns    map[net.Conn]struct{}
	closed   bool
	total    int   // connections admitted over the run
	bytes    int64 // bytes sent plus received over the run
	lookups  int   // audit entries of refused name lookups (lookupDenied)
	audit    map[dest]*Entry
	// span gets an event per connection (TraceIn); nil: not traced.
	span trace.Span
	wg   sync.WaitGroup
}

var _ sandbox.Egress = (*Binding)(nil)

// dest is one destination of the audit.
type dest struct {
	host string
	port int
}

// Bind makes the binding of run runID started by principal with policy p
// (already resolved: see Resolve). The caller hands it to the backend as
// the run's sandbox.Egress and closes it when the run ends.
func (s *Service) Bind(runID, principal string, p Policy) *Binding {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Binding{
		s: s, runID: runID, principal: principal, limits: s.cfg.Limits,
		ctx: ctx, cancel: cancel, names: newStubNames(),
		policy: clonePolicy(p), conns: map[net.Conn]struct{}{}, audit: map[dest]*Entry{},
	}
}

// Serve starts serving c with the binding's policy and returns at once;
// the sockets are served until Close, which closes them. Serving a
// capture after Close closes it at once. Serve may be called again with
// another capture (each is served the same way).
func (b *Binding) Serve(c *sandbox.Capture) {
	if b == nil || c == nil {
		_ = c.Close()
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		_ = c.Close()
		return
	}
	b.captures = append(b.captures, c)
	if c.Proxy != nil {
		b.goLocked(func() { b.acceptLoop(c.Proxy, b.handleProxy) })
	}
	for _, l := range c.Ports {
		b.goLocked(func() { b.acceptLoop(l, b.handleTransparent) })
	}
	if c.DNS != nil {
		b.goLocked(func() { b.serveDNSPacket(c.DNS) })
	}
	if c.DNSTCP != nil {
		b.goLocked(func() { b.serveDNSStream(c.DNSTCP) })
	}
}

// goLocked runs f in a goroutine Close waits for; b.mu is held.
func (b *Binding) goLocked(f func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
}

// acceptLoop hands each accepted connection to handle until l is closed.
// Other accept errors (out of descriptors) are retried after a pause: a
// listener left unserved would leave the program's connections hanging.
func (b *Binding) acceptLoop(l net.Listener, handle func(net.Conn)) {
	for {
		conn, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || b.ctx.Err() != nil {
				return
			}
			time.Sleep(acceptRetry)
			continue
		}
		if !b.track(conn) {
			_ = conn.Close()
			b.s.denied.Add(1)
			continue
		}
		go func() {
			defer b.untrack(conn)
			handle(conn)
		}()
	}
}

// acceptRetry is the pause after a failed accept.
const acceptRetry = 50 * time.Millisecond

// openSlack is how many connections past MaxOpenConns are still accepted,
// so that a program is told why (a 403 naming the limit); past that they
// are closed at once, so a flood holds no more descriptors.
const openSlack = 16

// track registers an accepted connection so Close can end it; false when
// the binding is closed or far past its open-connection limit.
func (b *Binding) track(conn net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || len(b.conns) >= b.limits.MaxOpenConns+openSlack {
		return false
	}
	b.conns[conn] = struct{}{}
	b.wg.Add(1)
	return true
}

// untrack closes and forgets conn.
func (b *Binding) untrack(conn net.Conn) {
	_ = conn.Close()
	b.mu.Lock()
	delete(b.conns, conn)
	b.mu.Unlock()
	b.wg.Done()
}

// SetPolicy replaces the binding's policy whole. It applies to new
// connections and DNS answers; connections already open keep going until
// they close or the binding is closed.
func (b *Binding) SetPolicy(p Policy) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.policy = clonePolicy(p)
	b.mu.Unlock()
}

// Policy returns the binding's current policy.
func (b *Binding) Policy() Policy {
	if b == nil {
		return Policy{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return clonePolicy(b.policy)
}

// Record returns the audit so far, one entry per destination, sorted by
// host then port.
func (b *Binding) Record() []Entry {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Entry, 0, len(b.audit))
	for _, e := range b.audit {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Host != out[j].Host {
			return out[i].Host < out[j].Host
		}
		return out[i].Port < out[j].Port
	})
	return out
}

// Close closes the binding's sockets and open connections and waits for
// its goroutines, so Record is final afterwards. It is idempotent.
func (b *Binding) Close() {
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	b.cancel()
	for _, c := range b.captures {
		_ = c.Close()
	}
	for conn := range b.conns {
		_ = conn.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// openConns counts connections from the sandbox open now.
func (b *Binding) openConns() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}
