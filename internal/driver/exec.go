package driver

import (
	"context"
	"fmt"
	"time"

	"github.com/codexec/codexec/internal/output"
)

// Outcome is the raw outcome of one Exec.
type Outcome struct {
	Reply          Reply
	Stdout, Stderr string
	Truncated      bool
	TimedOut       bool
	Cancelled      bool
	Interrupted    bool
	// Lost is set when the interpreter died or was killed: its state is
	// gone, for LostWhy.
	Lost     bool
	LostWhy  string
	Duration time.Duration
}

// Exec sends code and waits for the answer, interrupting it on timeout or
// when ctx ends, and killing the interpreter if it does not answer the
// interrupt within grace. Output goes to sinks bounded by lim.
func (c *Conn) Exec(ctx context.Context, code string, timeout, grace time.Duration, lim output.Limits, obs output.Observer) Outcome {
	outSink, errSink := output.NewSink(lim, obs.For("stdout")), output.NewSink(lim, obs.For("stderr"))
	p := c.begin(outSink, errSink, nil)
	defer c.end()
	start := time.Now()
	oc := c.await(ctx, p, code, timeout, grace)
	oc.Duration = time.Since(start)
	var t1, t2 bool
	oc.Stdout, t1 = outSink.Result()
	oc.Stderr, t2 = errSink.Result()
	oc.Truncated = t1 || t2
	return oc
}

// begin starts a request whose output goes to out and errw (nil: it is
// dropped) and whose checkpoint bytes, if any, to ch.
func (c *Conn) begin(out, errw *output.Sink, ch *chunks) *pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	p := &pending{id: c.nextID, reply: make(chan Reply, 1), end: make(chan struct{}, 1), chunks: ch}
	c.waiting = p
	// A nil *output.Sink would be a non-nil io.Writer: no sink is nil.
	c.outMux.SetSink(nil)
	c.errMux.SetSink(nil)
	if out != nil {
		c.outMux.SetSink(out)
	}
	if errw != nil {
		c.errMux.SetSink(errw)
	}
	return p
}

func (c *Conn) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting = nil
	c.outMux.SetSink(nil)
	c.errMux.SetSink(nil)
}

// execRequest is an exec request (protocol.go); a struct, not a map,
// encodes without sorting keys or boxing values.
type execRequest struct {
	ID   int64  `json:"id"`
	Op   string `json:"op"`
	Code string `json:"code"`
}

func (c *Conn) await(ctx context.Context, p *pending, code string, timeout, grace time.Duration) Outcome {
	if err := c.send(execRequest{ID: p.id, Op: "exec", Code: code}); err != nil {
		return Outcome{Lost: true, LostWhy: "the interpreter is not accepting input: " + err.Error()}
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-p.reply:
		return c.settle(p, r)
	case <-c.dead:
		return Outcome{Lost: true, LostWhy: c.DeathReason()}
	case <-ctx.Done():
		oc := c.interrupt(p, grace, false)
		oc.Cancelled = true
		return oc
	case <-timer.C:
		return c.interrupt(p, grace, true)
	}
}

// settle waits briefly for the stderr end frame so stderr is complete.
func (c *Conn) settle(p *pending, r Reply) Outcome {
	select {
	case <-p.end:
	case <-time.After(2 * time.Second):
	}
	c.mu.Lock()
	if r.RSSKB > 0 {
		c.rssKB = r.RSSKB
	}
	c.mu.Unlock()
	return Outcome{Reply: r, Interrupted: r.Interrupted}
}

func (c *Conn) interrupt(p *pending, grace time.Duration, timedOut bool) Outcome {
	_ = c.send(map[string]any{"op": "interrupt"})
	select {
	case r := <-p.reply:
		oc := c.settle(p, r)
		oc.TimedOut, oc.Interrupted = timedOut, true
		return oc
	case <-c.dead:
		return Outcome{TimedOut: timedOut, Lost: true, LostWhy: c.DeathReason()}
	case <-time.After(grace):
	}
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.Kill()
	why := fmt.Sprintf("the interpreter did not respond to the interrupt within %v and was killed", grace)
	return Outcome{TimedOut: timedOut, Lost: true, LostWhy: why}
}
