package egress

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// maxRequestHead bounds a request line and headers from the program, so
// an endless header cannot grow the server's memory.
const maxRequestHead = 64 << 10

var errHeadTooLarge = errors.New("codexec egress: the request head is larger than 64 KiB")

// readRequest reads one request from the program with its head bounded.
func readRequest(c *meteredConn, br *bufio.Reader) (*http.Request, error) {
	c.head = maxRequestHead
	defer func() { c.head = 0 }()
	return http.ReadRequest(br)
}

// errLimit ends a connection when the run's byte limit is reached.
var errLimit = errors.New("codexec egress: this run reached its network byte limit")

// flow is one connection from the sandbox with the upstream connections
// serving it: where its bytes are counted, and when it last moved a byte
// either way (for the idle timeout).
type flow struct {
	b  *Binding
	mu sync.Mutex
	d  dest
	// pendingSent and pendingRecv are bytes moved while the flow had no
	// destination yet (the request that names it); the first target
	// gets them.
	pendingSent, pendingRecv int64
	last                     atomic.Int64 // unix nanoseconds of the last byte either way
}

func (b *Binding) newFlow() *flow {
	f := &flow{b: b}
	f.touch()
	return f
}

func (f *flow) touch() { f.last.Store(time.Now().UnixNano()) }

// target sets the destination bytes are counted for, from now on and
// those moved before it had one. A zero d (after a denial) drops them:
// bytes of a denied request are not traffic to any destination.
func (f *flow) target(d dest) {
	f.mu.Lock()
	f.d = d
	sent, recv := f.pendingSent, f.pendingRecv
	f.pendingSent, f.pendingRecv = 0, 0
	f.mu.Unlock()
	if d.host != "" && sent+recv > 0 {
		f.b.count(d, sent, recv)
	}
}

// add counts bytes for the flow's destination; false past the byte limit.
func (f *flow) add(sent, recv int64) bool {
	f.mu.Lock()
	d := f.d
	if d.host == "" {
		f.pendingSent += sent
		f.pendingRecv += recv
	}
	f.mu.Unlock()
	if d.host == "" {
		return true
	}
	return f.b.count(d, sent, recv)
}

// idle reports whether no byte moved either way for the idle timeout.
func (f *flow) idle() bool {
	return time.Since(time.Unix(0, f.last.Load())) >= f.b.limits.IdleTimeout
}

// meteredConn wraps one side of a flow. On the sandbox side (client) it
// counts bytes: read = sent by the program, written = received by it.
// On both sides a read waits at most until the flow has been idle for the
// idle timeout.
type meteredConn struct {
	net.Conn
	f      *flow
	client bool
	// head bounds the bytes read while a request head is parsed: 0 = no
	// bound, > 0 = bytes left, < 0 = spent (reads fail).
	head int64
	// readBy and writeBy are the deadlines last set; they are moved only
	// when a quarter of the idle timeout has passed (setting one per read
	// costs), the idle check after a timeout keeps the bound exact.
	readBy, writeBy time.Time
}

// extend moves a deadline when it is due for it.
func (c *meteredConn) extend(by *time.Time, set func(time.Time) error) {
	idle := c.f.b.limits.IdleTimeout
	now := time.Now()
	if by.Sub(now) < idle-idle/4 {
		*by = now.Add(idle)
		_ = set(*by)
	}
}

func (f *flow) wrap(c net.Conn, client bool) *meteredConn {
	return &meteredConn{Conn: c, f: f, client: client}
}

func (c *meteredConn) Read(p []byte) (int, error) {
	if c.head < 0 {
		return 0, errHeadTooLarge
	}
	if c.head > 0 && int64(len(p)) > c.head {
		p = p[:c.head]
	}
	n, err := c.read(p)
	if c.head > 0 {
		if c.head -= int64(n); c.head == 0 {
			c.head = -1
		}
	}
	return n, err
}

func (c *meteredConn) read(p []byte) (int, error) {
	for {
		c.extend(&c.readBy, c.Conn.SetReadDeadline)
		n, err := c.Conn.Read(p)
		if n > 0 {
			c.f.touch()
			if c.client && !c.f.add(int64(n), 0) {
				return n, errLimit
			}
			return n, err
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && !c.f.idle() {
			continue // the other direction is busy: not idle
		}
		return n, err
	}
}

func (c *meteredConn) Write(p []byte) (int, error) {
	total := 0
	for {
		c.extend(&c.writeBy, c.Conn.SetWriteDeadline)
		n, err := c.Conn.Write(p[total:])
		total += n
		if n > 0 {
			c.f.touch()
			if c.client && !c.f.add(0, int64(n)) {
				return total, errLimit
			}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && !c.f.idle() && total < len(p) {
			continue
		}
		return total, err
	}
}

// CloseWrite half-closes when the wrapped connection can, so a tunnel
// passes on an end of stream without ending the other direction.
func (c *meteredConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// bufferedConn replays bytes already read into r (peeked to decide what
// the connection is) before reading more from the connection.
type bufferedConn struct {
	*meteredConn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
