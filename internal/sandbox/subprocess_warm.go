package sandbox

import (
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox/helper"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
)

// Warm runners in subprocess mode: the interpreter and its stub (warm.go)
// started ahead as a plain host process in its own process group, with the
// run's file size cap, waiting on fd 3 for one run; the run's cwd and
// environment are applied by the stub. Nothing is isolated here, as for
// any subprocess run (SECURITY.md); the runner only saves the start-up.

// subRunner is a subprocess runner: the stub and its start-up run marker,
// which marks the children a run forks without exec (runmark.go).
type subRunner struct {
	stubRunner
	marker string
}

func (r *subRunner) destroy() {
	r.closeFiles()
	r.killGroup()
}

// newRunner starts a subprocess runner for req and waits until it is ready.
func (s *Subprocess) newRunner(req warmRequest) (warmRunner, error) {
	rp, err := newRunnerPipes()
	if err != nil {
		return nil, err
	}
	defer rp.closeChild()
	argv := req.base.Argv
	cmd := exec.Command(argv[0], argv[1:]...)
	// Children a run forks without exec keep the runner's start-up
	// environment (the stub changes only its copy): a run marker of the
	// runner's own marks them (runmark.go).
	marker := proc.NewRunMarker("warm")
	cmd.Dir, cmd.Env = "/", proc.MarkedEnv(req.base.Env, marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = rp.child[0], rp.child[1], rp.child[2]
	cmd.ExtraFiles = []*os.File{rp.child[3]}
	wait, err := proc.StartTracked(cmd)
	if err != nil {
		rp.close()
		return nil, err
	}
	rp.closeChild()
	rp.r.cmd, rp.r.wait = cmd, wait
	r := &subRunner{stubRunner: rp.r, marker: marker}
	limitFileSize(cmd.Process.Pid, req.base.Limits.DiskBytes)
	if err := r.awaitReady(); err != nil {
		r.destroy()
		return nil, err
	}
	r.mem = residentBytes(cmd.Process.Pid)
	return r, nil
}

// startWarm runs spec in the taken runner r: output attached (python: fresh
// pipes handed over, status reported early), then the run handed over.
func (s *Subprocess) startWarm(spec Spec, req warmRequest, r *subRunner) (*proc.HostProc, error) {
	early := req.kind == WarmPython
	stdout, stderr := r.stdout, r.stderr
	if early {
		var err error
		if stdout, stderr, err = r.handOverStdio(); err != nil {
			s.destroyLater(r)
			return nil, err
		}
	}
	runMarker := proc.NewRunMarker(spec.ID)
	signal := groupSignal(r.cmd, runMarker, r.marker)
	// A run that reported its status early is not killed by Release: the
	// cleanup kills what it left (as Release does for a cold run).
	kill := func() error { return signal(syscall.SIGKILL) }
	hooks := proc.Hooks{Signal: signal, Cleanup: kill}
	var e *earlyRun
	if early {
		e, hooks = newEarly(&r.stubRunner, hooks, &s.cleanups, func() { _ = kill() })
	}
	p := proc.Adopt(r.cmd, r.wait, r.stdin, stdout, stderr, spec.Stdin, spec.Stdout, spec.Stderr, hooks)
	if early {
		e.attach(p)
	}
	_, err := r.ctl.Write(helper.EncodeRun(spec.Dir, proc.MarkedEnv(spec.Env, runMarker), req.code, req.args))
	if !early {
		_ = r.ctl.Close()
	}
	slog.Debug("warm run", "id", spec.ID, "kind", req.kind, "mode", "subprocess")
	if err != nil {
		return nil, failedHandOver(p, "warm runner", err)
	}
	return p, nil
}

// Prewarm starts a warm runner for runs like spec ahead of the first such
// run. Specs that cannot run warm are ignored.
func (s *Subprocess) Prewarm(spec Spec) {
	if req, ok := parseWarm(spec); ok {
		s.warm.demand(req)
	}
}

// Close stops the warm runners. The backend must not be used afterwards.
func (s *Subprocess) Close() error {
	s.closeWarm()
	return nil
}
