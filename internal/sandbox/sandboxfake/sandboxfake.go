// Package sandboxfake is a sandbox.Backend that runs nothing: it records
// every Spec it is given and answers with an outcome a test scripts, so the
// layers above the sandbox (the engine, the toolsets, the error contract)
// are tested in memory, in milliseconds, on any host. It keeps the
// contract's observable parts: output goes to the spec's writers, files a
// script writes land in the spec's workspace (artifacts), Terminate and Kill
// end a run that is still "running", Release is required once. It is for
// tests only; the real backends have their own tests and the end-to-end
// suite.
package sandboxfake

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/codexec/codexec/internal/confine"
	"github.com/codexec/codexec/internal/sandbox"
)

// Outcome is what a scripted run does: it writes Stdout and Stderr, writes
// Files (names relative to the spec's Dir), then lasts Duration (or until
// Terminate or Kill) and ends with Exit.
type Outcome struct {
	Stdout, Stderr string
	Files          map[string]string
	Duration       time.Duration
	Exit           sandbox.Exit
	// StartErr, if set, fails Start itself.
	StartErr error
}

// Script decides a run's outcome from its spec.
type Script func(spec sandbox.Spec) Outcome

// Backend is the fake. The zero value is not usable: make it with New.
type Backend struct {
	script   Script
	isolated bool
	// enforced scripts Enforced (nil: every limit is held by nothing).
	enforced func(sandbox.Spec) sandbox.Enforcement

	mu    sync.Mutex
	specs []sandbox.Spec
}

// New returns a backend answering each Start with script's outcome.
// isolated is what Isolated reports (the engine treats the two kinds of
// backend differently: workspaces, notes).
func New(script Script, isolated bool) *Backend {
	return &Backend{script: script, isolated: isolated}
}

// WithEnforcement makes Enforced answer with enforced(spec), as a backend
// whose mechanisms a test chooses; it returns b.
func (b *Backend) WithEnforcement(enforced func(sandbox.Spec) sandbox.Enforcement) *Backend {
	b.enforced = enforced
	return b
}

// Enforced is the scripted Enforcement of spec (see WithEnforcement);
// without one, sandbox.Unenforced: the fake runs nothing and holds no limit.
func (b *Backend) Enforced(spec sandbox.Spec) sandbox.Enforcement {
	if b.enforced == nil {
		return sandbox.Unenforced
	}
	return b.enforced(spec)
}

// Echo is a Script for the common case: every run prints out and exits 0.
func Echo(out string) Script {
	return func(sandbox.Spec) Outcome { return Outcome{Stdout: out} }
}

// Specs returns the specs started so far, in order.
func (b *Backend) Specs() []sandbox.Spec {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]sandbox.Spec(nil), b.specs...)
}

// Name is "fake".
func (b *Backend) Name() string { return "fake" }

// Isolated is what New was given.
func (b *Backend) Isolated() bool { return b.isolated }

// User is the server's own identity: the fake touches files as the test.
func (b *Backend) User() confine.Identity { return confine.Identity{} }

// Start records spec and plays its scripted outcome.
func (b *Backend) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Process, error) {
	b.mu.Lock()
	b.specs = append(b.specs, spec)
	b.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o := b.script(spec)
	if o.StartErr != nil {
		return nil, o.StartErr
	}
	if err := writeFiles(spec.Dir, o.Files); err != nil {
		return nil, err
	}
	write(spec.Stdout, o.Stdout)
	write(spec.Stderr, o.Stderr)
	p := &process{exit: o.Exit, stopped: make(chan sandbox.Exit, 1)}
	p.timer = time.AfterFunc(o.Duration, func() { p.end(o.Exit) })
	return p, nil
}

func write(w interface{ Write([]byte) (int, error) }, s string) {
	if w != nil && s != "" {
		_, _ = w.Write([]byte(s))
	}
}

func writeFiles(dir string, files map[string]string) error {
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// process is a scripted run: it ends when its Duration passes or it is
// terminated or killed, whichever comes first.
type process struct {
	exit     sandbox.Exit
	timer    *time.Timer
	stopped  chan sandbox.Exit
	once     sync.Once
	released bool
	mu       sync.Mutex
}

func (p *process) end(e sandbox.Exit) {
	p.once.Do(func() { p.stopped <- e })
}

// Pid is 0: nothing runs on the host.
func (p *process) Pid() int { return 0 }

// Wait blocks until the run ends and returns how.
func (p *process) Wait() (sandbox.Exit, error) {
	e := <-p.stopped
	p.stopped <- e // later Waits see it too
	return e, nil
}

// Terminate ends the run as SIGTERM would.
func (p *process) Terminate() error {
	p.timer.Stop()
	p.end(sandbox.Exit{Code: -1, Signal: int(syscall.SIGTERM)})
	return nil
}

// Kill ends the run as SIGKILL would.
func (p *process) Kill() error {
	p.timer.Stop()
	p.end(sandbox.Exit{Code: -1, Signal: int(syscall.SIGKILL)})
	return nil
}

// ErrReleasedTwice is Release's answer to a second call: the contract
// says exactly once, and a test should hear about a second.
var ErrReleasedTwice = errors.New("sandboxfake: Release called twice")

// Release ends the run if it still runs.
func (p *process) Release(time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released {
		return ErrReleasedTwice
	}
	p.released = true
	p.timer.Stop()
	p.end(sandbox.Exit{Code: -1, Signal: int(syscall.SIGKILL)})
	return nil
}
