package codemode

// The code-mode channel between codexec and one sandboxed program runs over
// the program's stdio as package frame describes. Frames are requests
// {"id", "op", "params"} or responses {"id", "re": true, "ok", "result" |
// "error"}; each side numbers its own requests from 1, so requests flow
// both ways and many can be in flight at once (Promise.all). A request with
// id 0 is a notification and gets no response (the program's final
// {"op": "done", "params": envelope}).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/codexec/codexec/internal/frame"
)

// MaxFrame bounds one frame from the program (and so the envelope); a
// larger one breaks the channel: it and everything after are output
// (frame.PassThrough), so a cut-off envelope is never taken for a result.
const MaxFrame = 24 << 20

// Handler answers one request from the program. A returned error becomes an
// error response with its message. It runs on its own goroutine.
type Handler func(ctx context.Context, op string, params json.RawMessage) (json.RawMessage, error)

type message struct {
	ID     int64           `json:"id"`
	Op     string          `json:"op,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Re     bool            `json:"re,omitempty"`
	OK     bool            `json:"ok,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Channel is the host end. It is the program's stdout writer (Write) and
// writes frames to the program's stdin. Safe for concurrent use.
type Channel struct {
	ctx     context.Context
	cancel  context.CancelFunc
	handler Handler
	demux   *frame.Demux
	enc     *frame.Encoder

	pmu     sync.Mutex
	next    int64
	pending map[int64]chan message
	closed  bool

	handlers sync.WaitGroup
}

// NewChannel returns a channel whose program output goes to sink (may be
// nil) and whose requests are answered by h. ctx bounds the handlers.
func NewChannel(ctx context.Context, mark string, toProgram io.Writer, sink io.Writer, h Handler) *Channel {
	ctx, cancel := context.WithCancel(ctx)
	c := &Channel{ctx: ctx, cancel: cancel, handler: h, enc: frame.NewEncoder(toProgram), pending: map[int64]chan message{}}
	c.demux = frame.NewDemux(frame.Options{Mark: mark, MaxFrame: MaxFrame, Overflow: frame.PassThrough, OnFrame: c.dispatch}, sink)
	return c
}

// Write takes the program's stdout; it never fails or blocks on handlers.
func (c *Channel) Write(p []byte) (int, error) { return c.demux.Write(p) }

func (c *Channel) dispatch(line []byte) {
	var f message
	if err := json.Unmarshal(line, &f); err != nil {
		return
	}
	if f.Re {
		c.pmu.Lock()
		ch := c.pending[f.ID]
		delete(c.pending, f.ID)
		c.pmu.Unlock()
		if ch != nil {
			ch <- f
		}
		return
	}
	c.handlers.Add(1)
	go func() {
		defer c.handlers.Done()
		res, err := c.handler(c.ctx, f.Op, f.Params)
		if f.ID == 0 {
			return
		}
		reply := message{ID: f.ID, Re: true, OK: err == nil, Result: res}
		if err != nil {
			reply.Result, reply.Error = nil, err.Error()
		}
		if err := c.enc.Encode(reply); err != nil && c.ctx.Err() == nil {
			_ = c.enc.Encode(message{ID: f.ID, Re: true, Error: "reply could not be sent: " + err.Error()})
		}
	}()
}

// Request sends a request to the program and waits for its response.
func (c *Channel) Request(ctx context.Context, op string, params any) (json.RawMessage, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ch := make(chan message, 1)
	c.pmu.Lock()
	if c.closed {
		c.pmu.Unlock()
		return nil, errors.New("channel closed")
	}
	c.next++
	id := c.next
	c.pending[id] = ch
	c.pmu.Unlock()
	if err := c.enc.Encode(message{ID: id, Op: op, Params: p}); err != nil {
		return nil, err
	}
	select {
	case f, ok := <-ch:
		if !ok {
			return nil, errors.New("channel closed before the program answered")
		}
		if !f.OK {
			return nil, fmt.Errorf("%s", f.Error)
		}
		return f.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close cancels running handlers, waits for them, and fails pending
// requests. Call it after the program has exited.
func (c *Channel) Close() {
	c.cancel()
	c.handlers.Wait()
	c.pmu.Lock()
	c.closed = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.pmu.Unlock()
	c.demux.Flush()
}
