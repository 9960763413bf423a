package mcpserver

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callWire watches the tools/call traffic of one client's connection so a
// shutdown can wait on what it can observe instead of sleeping: every call
// the SDK has read reaching the drain (counted, or refused), and every call
// counted being answered on the wire. A handler that returned has not
// necessarily had its response written, and a closing connection drops
// writes; a call the SDK has read reaches its handler on a goroutine of its
// own, some time later.
type callWire struct {
	mu      sync.Mutex
	read    int                     // tools/call requests the SDK has read
	reached int                     // of those, how many passed the drain's middleware
	pending map[jsonrpc.ID]struct{} // read and not yet answered
	changed chan struct{}           // closed and replaced on every change
}

func newCallWire() *callWire {
	return &callWire{pending: map[jsonrpc.ID]struct{}{}, changed: make(chan struct{})}
}

// wrap returns t with its connections' writes observed by w.
func (w *callWire) wrap(t mcp.Transport) mcp.Transport { return wiredTransport{t, w} }

type wiredTransport struct {
	mcp.Transport
	w *callWire
}

func (t wiredTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return wiredConn{c, t.w}, nil
}

type wiredConn struct {
	mcp.Connection
	w *callWire
}

func (c wiredConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if r, ok := msg.(*jsonrpc.Response); ok {
		c.w.update(func() { delete(c.w.pending, r.ID) })
	}
	return err
}

// noteRead counts msg if it is a tools/call request. The transport calls it
// (Server.NoteRead) before it hands msg to the SDK, on the goroutine that
// later reports the end of the input: so no call read before the end can be
// missed by InputEnded.
func (w *callWire) noteRead(msg jsonrpc.Message) {
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "tools/call" && r.ID.IsValid() {
		w.update(func() { w.read++; w.pending[r.ID] = struct{}{} })
	}
}

// reachedDrain counts a tools/call that reached the drain's middleware.
func (w *callWire) reachedDrain() { w.update(func() { w.reached++ }) }

func (w *callWire) update(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f()
	close(w.changed)
	w.changed = make(chan struct{})
}

// waitFor blocks until done holds (checked under w's lock) or timeout.
func (w *callWire) waitFor(done func() bool, timeout time.Duration) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		ok, changed := done(), w.changed
		w.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			return
		}
	}
}

// waitReached waits until every call read has reached the drain.
func (w *callWire) waitReached(timeout time.Duration) {
	w.waitFor(func() bool { return w.reached >= w.read }, timeout)
}

// waitAnswered waits until every call read has been answered.
func (w *callWire) waitAnswered(timeout time.Duration) {
	w.waitFor(func() bool { return len(w.pending) == 0 }, timeout)
}
