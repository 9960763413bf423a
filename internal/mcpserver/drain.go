package mcpserver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrShuttingDown refuses tool calls that arrive after Shutdown began, and
// is the cause of the cancellation of calls still running after the grace.
var ErrShuttingDown = errors.New("codexec is shutting down; retry on another instance")

// drain tracks running tool calls so a shutdown can wait for them and then
// cancel the rest. The SDK's own close waits for handlers without bound;
// this gives that wait a deadline.
type drain struct {
	mu       sync.Mutex
	running  int
	draining bool
	idle     chan struct{} // closed when running drops to 0 while draining

	kill     context.Context
	killCall context.CancelCauseFunc

	finishOnce sync.Once // the stdio shutdown, from ctx or the input's end
	cancelled  int       // calls finish cancelled, set inside finishOnce

	// refuse answers a call that arrives after Shutdown began, as a tool
	// error of that tool (SERVER_NOT_READY); nil: a JSON-RPC error.
	refuse func(*mcp.CallToolRequest) mcp.Result

	// wire observes the calls of ServeUntil's client on the wire. Over
	// HTTP nothing notes reads, so shutdown never waits on it there.
	wire *callWire
}

func newDrain() *drain {
	d := &drain{idle: make(chan struct{}), wire: newCallWire()}
	d.kill, d.killCall = context.WithCancelCause(context.Background())
	return d
}

// middleware counts tools/call requests and ties each to the kill switch.
func (d *drain) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		d.wire.reachedDrain()
		if !d.enter() {
			if call, ok := req.(*mcp.CallToolRequest); ok && d.refuse != nil && call.Params != nil {
				return d.refuse(call), nil
			}
			return nil, ErrShuttingDown
		}
		defer d.leave()
		ctx, cancel := context.WithCancelCause(ctx)
		stop := context.AfterFunc(d.kill, func() { cancel(context.Cause(d.kill)) })
		defer stop()
		defer cancel(nil)
		return next(ctx, method, req)
	}
}

func (d *drain) enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return false
	}
	d.running++
	return true
}

func (d *drain) leave() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.running--
	if d.draining && d.running == 0 {
		close(d.idle)
	}
}

// Running is the number of tool calls in progress.
func (s *Server) Running() int {
	s.drain.mu.Lock()
	defer s.drain.mu.Unlock()
	return s.drain.running
}

// Shutdown refuses new tool calls, waits until the running ones finish or
// ctx ends, then cancels those left (their runs are killed and logged as
// cancelled) and waits up to killWait for them to return. Background runs
// get the same grace, then are cancelled too (their results say the server
// shut down). It reports how many calls and runs were still running at the
// deadline. Call it once.
func (s *Server) Shutdown(ctx context.Context, killWait time.Duration) (cancelled int) {
	if r := s.deps.Runs; r != nil {
		defer func() { cancelled += r.Shutdown(ctx, killWait) }()
	}
	d := s.drain
	d.mu.Lock()
	d.draining = true
	if d.running == 0 {
		close(d.idle)
	}
	d.mu.Unlock()
	select {
	case <-d.idle:
		return 0
	case <-ctx.Done():
	}
	cancelled = s.Running()
	d.killCall(ErrShuttingDown)
	select {
	case <-d.idle:
	case <-time.After(killWait):
	}
	return cancelled
}

// answerBound bounds the wait for the responses of calls that have
// returned to be written, and pickUpBound the wait for calls the SDK has
// read to reach their handlers. Both are events that take microseconds;
// the bounds only keep a shutdown finite should one never come.
const (
	answerBound = 2 * time.Second
	pickUpBound = time.Second
)

// ServeUntil serves one client on t until it disconnects or ctx ends. When
// ctx ends, running tool calls get grace to finish (then are cancelled, see
// Shutdown) and the session is closed gracefully, so the responses of the
// calls that finished are still delivered. It returns how many calls were
// cancelled.
func (s *Server) ServeUntil(ctx context.Context, t mcp.Transport, grace, killWait time.Duration) (int, error) {
	ss, err := s.mcp.Connect(context.Background(), s.drain.wire.wrap(s.withTasks(t)), nil)
	if err != nil {
		return 0, err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended:
		return 0, err
	case <-ctx.Done():
	}
	n := s.finish(grace, killWait)
	_ = ss.Close()
	<-ended
	return n, nil
}

// NoteRead tells the server that its stdio transport read msg and is about
// to hand it to the SDK (ServeUntil's transport calls it for every
// message): InputEnded then waits for the tools/call requests read so far
// to reach their handlers, and a shutdown for their answers to be written.
func (s *Server) NoteRead(msg jsonrpc.Message) { s.drain.wire.noteRead(msg) }

// InputEnded answers the tool calls of a client whose input has ended: it
// refuses new calls, lets the running ones finish within grace, cancels the
// rest (they are answered with an error) and waits for their responses to
// be written. A transport calls it before it reports the end of its input
// to the SDK, which writes nothing once its reader has ended. It returns
// how many calls were cancelled. With ServeUntil's own shutdown, only the
// first does the work; the other waits for it.
func (s *Server) InputEnded(grace, killWait time.Duration) int {
	// Calls the SDK has already read are counted as running and answered,
	// not refused as arriving during the shutdown.
	s.drain.wire.waitReached(pickUpBound)
	return s.finish(grace, killWait)
}

// finish runs Shutdown with grace once and waits until the responses of
// the calls it waited for are written: a handler that returned has not
// necessarily written its response yet, and a closing connection drops
// writes. Later calls wait for the first and return its count.
func (s *Server) finish(grace, killWait time.Duration) int {
	s.drain.finishOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		s.drain.cancelled = s.Shutdown(ctx, killWait)
		s.drain.wire.waitAnswered(answerBound)
	})
	return s.drain.cancelled
}
