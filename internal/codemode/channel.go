package codemode

// The code-mode channel between codexec and one sandboxed program:
//
//	host ──program stdin──▶ program    one JSON frame per line (stdin carries nothing else)
//	host ◀──program stdout── program   user output interleaved with MARK + JSON frame + "\n"
//
// Frames are requests {"id", "op", "params"} or responses {"id", "re": true,
// "ok", "result" | "error"}; each side numbers its own requests from 1, so
// requests flow both ways and many can be in flight at once (Promise.all).
// A request with id 0 is a notification and gets no response (the program's
// final {"op": "done", "params": envelope}). MARK is a
// random per-run token, so ordinary output cannot be taken for a frame.
// Only stdio is used: it works in every sandbox backend (containers pass
// just stdio) and the sandbox needs no socket or network.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// MaxFrame bounds one frame from the program (and so the envelope); a
// larger one breaks the channel (later frames are treated as output).
const MaxFrame = 24 << 20

// Handler answers one request from the program. A returned error becomes an
// error response with its message. It runs on its own goroutine.
type Handler func(ctx context.Context, op string, params json.RawMessage) (json.RawMessage, error)

type frame struct {
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
	mark    []byte
	handler Handler

	wmu    sync.Mutex
	toProg io.Writer

	mu      sync.Mutex
	sink    io.Writer
	buf     []byte
	inFrame bool
	broken  bool

	pmu     sync.Mutex
	next    int64
	pending map[int64]chan frame
	closed  bool

	handlers sync.WaitGroup
}

// NewChannel returns a channel whose program output goes to sink (may be
// nil) and whose requests are answered by h. ctx bounds the handlers.
func NewChannel(ctx context.Context, mark string, toProgram io.Writer, sink io.Writer, h Handler) *Channel {
	ctx, cancel := context.WithCancel(ctx)
	return &Channel{ctx: ctx, cancel: cancel, mark: []byte(mark), handler: h, toProg: toProgram, sink: sink,
		pending: map[int64]chan frame{}}
}

// Write takes the program's stdout; it never fails or blocks on handlers.
func (c *Channel) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = append(c.buf, p...)
	for c.step() {
	}
	return len(p), nil
}

func (c *Channel) step() bool {
	if c.inFrame {
		i := bytes.IndexByte(c.buf, '\n')
		if i < 0 {
			if len(c.buf) > MaxFrame {
				c.broken, c.inFrame = true, false
				c.emit(c.buf)
				c.buf = c.buf[:0]
			}
			return false
		}
		c.dispatch(c.buf[:i])
		c.buf, c.inFrame = c.buf[i+1:], false
		return true
	}
	if i := bytes.Index(c.buf, c.mark); i >= 0 && !c.broken {
		c.emit(c.buf[:i])
		c.buf, c.inFrame = c.buf[i+len(c.mark):], true
		return true
	}
	keep := partialSuffix(c.buf, c.mark)
	c.emit(c.buf[:len(c.buf)-keep])
	c.buf = append(c.buf[:0], c.buf[len(c.buf)-keep:]...)
	return false
}

func (c *Channel) emit(b []byte) {
	if len(b) > 0 && c.sink != nil {
		_, _ = c.sink.Write(b)
	}
}

// partialSuffix is the length of the longest suffix of b that is a proper
// prefix of mark (a mark split across writes).
func partialSuffix(b, mark []byte) int {
	for n := min(len(mark)-1, len(b)); n > 0; n-- {
		if bytes.Equal(b[len(b)-n:], mark[:n]) {
			return n
		}
	}
	return 0
}

func (c *Channel) dispatch(line []byte) {
	var f frame
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
		reply := frame{ID: f.ID, Re: true, OK: err == nil, Result: res}
		if err != nil {
			reply.Result, reply.Error = nil, err.Error()
		}
		if err := c.send(reply); err != nil && c.ctx.Err() == nil {
			reply = frame{ID: f.ID, Re: true, Error: "reply could not be sent: " + err.Error()}
			_ = c.send(reply)
		}
	}()
}

func (c *Channel) send(f frame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.toProg.Write(append(b, '\n'))
	return err
}

// Request sends a request to the program and waits for its response.
func (c *Channel) Request(ctx context.Context, op string, params any) (json.RawMessage, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ch := make(chan frame, 1)
	c.pmu.Lock()
	if c.closed {
		c.pmu.Unlock()
		return nil, errors.New("channel closed")
	}
	c.next++
	id := c.next
	c.pending[id] = ch
	c.pmu.Unlock()
	if err := c.send(frame{ID: id, Op: op, Params: p}); err != nil {
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
	c.mu.Lock()
	if !c.inFrame {
		c.emit(c.buf)
	}
	c.buf = nil
	c.mu.Unlock()
}
