package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
)

// ErrStateTooBig is a checkpoint refused because the state is over the
// per-session limit.
var ErrStateTooBig = errors.New("the session's state is over the checkpoint limit")

// onChunk collects a checkpoint's bytes for the request in flight, up to
// its limit (the rest is dropped and the length check fails the request).
func (c *Conn) onChunk(id int64, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.waiting
	if p == nil || p.id != id || p.chunks == nil {
		return
	}
	if int64(len(p.chunks.b)+len(data)) > p.chunks.max {
		p.chunks.over = true
		return
	}
	p.chunks.b = append(p.chunks.b, data...)
}

// chunks are the checkpoint bytes a request receives.
type chunks struct {
	b    []byte
	max  int64
	over bool
}

// Checkpoint asks the driver for its interpreter's state: at most max
// bytes, within timeout (then the request is interrupted). The bytes are
// opaque here; the report names what they carry and what was lost.
func (c *Conn) Checkpoint(ctx context.Context, max int64, timeout, grace time.Duration) ([]byte, checkpoint.Report, error) {
	p := c.begin(nil, nil, &chunks{max: max})
	defer c.end()
	r, err := c.call(ctx, p, map[string]any{"id": p.id, "op": "checkpoint", "max": max}, nil, timeout, grace)
	if err != nil {
		return nil, checkpoint.Report{}, err
	}
	c.mu.Lock()
	got := p.chunks
	c.mu.Unlock()
	switch {
	case r.TooBig || got.over:
		return nil, checkpoint.Report{}, fmt.Errorf("%w of %d bytes", ErrStateTooBig, max)
	case !r.OK:
		return nil, checkpoint.Report{}, fmt.Errorf("the interpreter could not checkpoint its state: %s", r.Error)
	case int64(len(got.b)) != r.Bytes:
		return nil, checkpoint.Report{}, fmt.Errorf("checkpoint: received %d of %d bytes from the interpreter", len(got.b), r.Bytes)
	}
	return got.b, r.Report, nil
}

// Restore hands the driver a checkpoint's interpreter state to restore
// (fork: reseed random generators); it is decoded inside the sandbox only.
func (c *Conn) Restore(ctx context.Context, state []byte, fork bool, timeout, grace time.Duration) (checkpoint.Report, error) {
	p := c.begin(nil, nil, nil)
	defer c.end()
	r, err := c.call(ctx, p, map[string]any{"id": p.id, "op": "restore", "bytes": len(state), "fork": fork}, state, timeout, grace)
	if err != nil {
		return checkpoint.Report{}, err
	}
	if !r.OK {
		return checkpoint.Report{}, fmt.Errorf("the interpreter could not restore the checkpoint: %s", r.Error)
	}
	return r.Report, nil
}

// Reserve is the memory a python driver faults in ahead of a restore:
// Objects bytes of small objects' arenas, which the restored values fill
// instead of faulting in new pages (the restore releases what they do not
// use), and an Inbox buffer of that many bytes the payload is read into.
// Node drivers ignore it.
type Reserve struct{ Objects, Inbox int64 }

// Warm readies a driver for a restore: it loads what a restore needs
// (pickle, v8) before anyone waits for it and faults in rv. Called again,
// it grows the reserve.
func (c *Conn) Warm(ctx context.Context, rv Reserve, timeout, grace time.Duration) error {
	p := c.begin(nil, nil, nil)
	defer c.end()
	msg := map[string]any{"id": p.id, "op": "warm", "reserve": rv.Objects, "inbox": rv.Inbox}
	r, err := c.call(ctx, p, msg, nil, timeout, grace)
	if err == nil && !r.OK {
		err = errors.New(r.Error)
	}
	return err
}

// call sends msg (and payload, raw, after it) and waits for the reply; on
// timeout or cancellation it interrupts the request and, when the driver
// does not answer within grace, kills it. An error means no reply came.
// What the code prints meanwhile (from __getstate__, say) is dropped.
func (c *Conn) call(ctx context.Context, p *pending, msg map[string]any, payload []byte, timeout, grace time.Duration) (Reply, error) {
	if err := c.sendWith(msg, payload); err != nil {
		return Reply{}, fmt.Errorf("the interpreter is not accepting input: %w", err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-p.reply:
		c.settle(p, r)
		return r, nil
	case <-c.dead:
		return Reply{}, errors.New(c.DeathReason())
	case <-ctx.Done():
	case <-timer.C:
	}
	oc := c.interrupt(p, grace, true)
	if oc.Lost {
		return Reply{}, fmt.Errorf("%s was stopped after %v: %s", msg["op"], timeout, oc.LostWhy)
	}
	return Reply{}, fmt.Errorf("%s was interrupted after %v", msg["op"], timeout)
}

// sendWith writes one request line and, right after it, payload: the
// driver reads the payload's length from the line. Requests are sent by
// one caller at a time, so nothing comes between the two.
func (c *Conn) sendWith(msg map[string]any, payload []byte) error {
	if err := c.send(msg); err != nil || payload == nil {
		return err
	}
	if len(payload) > 64<<10 {
		growPipe(c.stdin)
	}
	_, err := c.stdin.Write(payload)
	return err
}
