package driver

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/frame"
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
)

// Conn is one started driver: a sandboxed interpreter process, its stdin
// for requests and its demultiplexed stdout and stderr.
type Conn struct {
	proc    sandbox.Process
	stdin   *os.File
	enc     *frame.Encoder // requests to the driver, on stdin
	outMux  *frame.Demux
	errMux  *frame.Demux
	ready   chan Reply
	dead    chan struct{}
	mu      sync.Mutex // guards what follows
	nextID  int64
	waiting *pending
	exit    sandbox.Exit
	closing bool
	rssKB   int64
}

// pending is the request in flight.
type pending struct {
	id    int64
	reply chan Reply
	end   chan struct{}
	// chunks collect a checkpoint's bytes (nil for other requests).
	chunks *chunks
}

// Launch starts argv in the session's sandbox with the given stdin,
// stdout and stderr.
type Launch func(ctx context.Context, argv []string, stdin *os.File, stdout, stderr io.Writer) (sandbox.Process, error)

// startTimeout bounds a driver's start-up, until its ready frame.
const startTimeout = 30 * time.Second

// Start starts the driver of lang (python or node, run by interpreter)
// through launch and waits until it is ready. onDeath is called once the
// process has ended on its own (not after Close); an error means no
// driver runs.
func Start(ctx context.Context, lang, interpreter string, launch Launch, onDeath func(*Conn)) (_ *Conn, retErr error) {
	mark := "\x1e\x1fcodexec-" + rand.Text()[:16] + ":"
	args, err := argv(lang, interpreter, mark)
	if err != nil {
		return nil, err
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer stdinR.Close()
	c := &Conn{stdin: stdinW, enc: frame.NewEncoder(stdinW), ready: make(chan Reply, 1), dead: make(chan struct{})}
	c.outMux, c.errMux = newDemux(mark, c.onOut, c.onChunk), newDemux(mark, c.onErr, nil)
	proc, err := launch(ctx, args, stdinR, c.outMux, c.errMux)
	if err != nil {
		_ = stdinW.Close()
		return nil, fmt.Errorf("start %s interpreter: %w", lang, err)
	}
	c.proc = proc
	go c.watch(onDeath)
	select {
	case <-c.ready:
		return c, nil
	case <-c.dead:
		_ = stdinW.Close()
		return nil, fmt.Errorf("the %s interpreter exited during start-up: %s", lang, c.DeathReason())
	case <-time.After(startTimeout):
		c.Kill()
		_ = stdinW.Close()
		return nil, fmt.Errorf("the %s interpreter did not start within %v", lang, startTimeout)
	}
}

// onOut handles frames from the driver's stdout.
func (c *Conn) onOut(r Reply) {
	if r.Op == "ready" {
		c.mu.Lock()
		c.rssKB = r.RSSKB
		c.mu.Unlock()
		select {
		case c.ready <- r:
		default:
		}
		return
	}
	c.mu.Lock()
	p := c.waiting
	c.mu.Unlock()
	if p != nil && p.id == r.ID {
		select {
		case p.reply <- r:
		default:
		}
	}
}

// onErr handles end frames from the driver's stderr.
func (c *Conn) onErr(r Reply) {
	c.mu.Lock()
	p := c.waiting
	c.mu.Unlock()
	if p != nil && p.id == r.ID && r.End {
		select {
		case p.end <- struct{}{}:
		default:
		}
	}
}

func (c *Conn) send(msg any) error { return c.enc.Encode(msg) }

// Dead is closed once the process has ended.
func (c *Conn) Dead() <-chan struct{} { return c.dead }

// Read reads the interpreter's counters (sandbox.Read): CPU so far and
// peak memory, restarted when resetPeak is set; false where its sandbox
// cannot read them while it runs.
func (c *Conn) Read(resetPeak bool) (proc.Reading, bool) { return sandbox.Read(c.proc, resetPeak) }

// IsDead reports whether the process has ended.
func (c *Conn) IsDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// DeathReason describes how the process ended.
func (c *Conn) DeathReason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.exit.OOMKilled:
		return "the interpreter was killed for exceeding its memory limit"
	case c.exit.Signal != 0:
		return fmt.Sprintf("the interpreter was killed by signal %d", c.exit.Signal)
	default:
		return fmt.Sprintf("the interpreter exited with code %d", c.exit.Code)
	}
}

// Kill stops the interpreter and everything it started, and returns once
// it has ended.
func (c *Conn) Kill() {
	_ = c.proc.Kill()
	<-c.dead
}

// Close ends the driver: its stdin closes (the driver exits), and after
// wait it is killed. onDeath is not called for it.
func (c *Conn) Close(wait time.Duration) {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	_ = c.stdin.Close()
	select {
	case <-c.dead:
	case <-time.After(wait):
		c.Kill()
	}
}

// Pid is the host pid of the top process: the interpreter itself in
// subprocess mode, the sandbox launcher otherwise (the driver's own pid
// may be a pid-namespace number).
func (c *Conn) Pid() int { return c.proc.Pid() }

// RSSKB is the interpreter's resident memory at its latest answer.
func (c *Conn) RSSKB() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rssKB
}

// watch waits for the interpreter to exit and records how.
func (c *Conn) watch(onDeath func(*Conn)) {
	ex, _ := c.proc.Wait()
	_ = c.proc.Release(time.Second)
	c.mu.Lock()
	c.exit = ex
	closing := c.closing
	c.mu.Unlock()
	close(c.dead)
	if !closing && onDeath != nil {
		onDeath(c)
	}
}
