package subprocess

import (
	"log/slog"
	"os"
	"os/exec"
	"syscall"

	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/helper"
	"github.com/codexec/codexec/internal/sandbox/warm"
)

// Warm runners in subprocess mode: the interpreter and its stub (warm.go)
// started ahead as a plain host process in its own process group, with the
// run's file size cap, waiting on fd 3 for one run; the run's cwd and
// environment are applied by the stub. Nothing is isolated here, as for
// any subprocess run (SECURITY.md); the runner only saves the start-up.

// subRunner is a subprocess runner: the stub and its start-up run marker,
// which marks the children a run forks without exec (runmark.go).
type subRunner struct {
	warm.Stub
	marker string
}

func (r *subRunner) Destroy() {
	r.CloseFiles()
	r.KillGroup()
	proc.UnguardGroup(r.Cmd.Process.Pid)
}

// newRunner starts a subprocess runner for req and waits until it is ready.
func (s *Backend) newRunner(req warm.Request) (warm.Runner, error) {
	rp, err := warm.NewPipes()
	if err != nil {
		return nil, err
	}
	defer rp.CloseChild()
	argv, err := runnerArgv(req)
	if err != nil {
		rp.Close()
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	// Children a run forks without exec keep the runner's start-up
	// environment (the stub changes only its copy): a run marker of the
	// runner's own marks them (see proc.NewRunMarker).
	marker := proc.NewRunMarker("warm")
	cmd.Dir, cmd.Env = "/", proc.MarkedEnv(req.Base.Env, marker)
	cmd.SysProcAttr = groupAttr()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = rp.Child[0], rp.Child[1], rp.Child[2]
	cmd.ExtraFiles = []*os.File{rp.Child[3]}
	wait, err := proc.StartTracked(cmd)
	if err != nil {
		rp.Close()
		return nil, err
	}
	// The runner's group (and the runs it will serve) is the watchdog's
	// until it is destroyed or its run released.
	proc.GuardGroup(cmd.Process.Pid)
	rp.CloseChild()
	rp.R.Cmd, rp.R.Wait = cmd, wait
	r := &subRunner{Stub: rp.R, marker: marker}
	if err := limitFileSize(cmd.Process.Pid, req.Base.Limits.DiskBytes); err != nil {
		r.Destroy()
		return nil, err
	}
	if err := r.AwaitReady(); err != nil {
		r.Destroy()
		return nil, err
	}
	r.Mem = proc.ResidentBytes(cmd.Process.Pid)
	return r, nil
}

// runnerArgv is the command of req's runner: the interpreter with its stub,
// or for an exec runner (bash) the helper's stub for it.
func runnerArgv(req warm.Request) ([]string, error) {
	if !req.Exec {
		return req.Base.Argv, nil
	}
	exe, err := helper.Exe()
	if err != nil {
		return nil, err
	}
	return append([]string{exe, helper.RunnerCommand, "--"}, req.Base.Argv...), nil
}

// startWarm runs spec in the taken runner r: output attached (python: fresh
// pipes handed over, status reported early), then the run handed over.
func (s *Backend) startWarm(spec sandbox.Spec, req warm.Request, r *subRunner) (*proc.HostProc, error) {
	early := req.Kind == sandbox.WarmPython
	stdout, stderr := r.Stdout, r.Stderr
	if early {
		var err error
		if stdout, stderr, err = r.HandOverStdio(); err != nil {
			s.runners.DestroyLater(r)
			return nil, err
		}
	}
	runMarker := proc.NewRunMarker(spec.ID)
	signal := groupSignal(r.Cmd, runMarker, r.marker)
	// A run that reported its status early is not killed by Release: the
	// cleanup kills what it left (as Release does for a cold run).
	kill := func() error { return signal(syscall.SIGKILL) }
	cleanup := func() error {
		err := kill()
		proc.UnguardGroup(r.Cmd.Process.Pid)
		return err
	}
	hooks := proc.Hooks{Signal: signal, Cleanup: cleanup}
	var e *warm.Early
	if early {
		e, hooks = warm.NewEarly(&r.Stub, hooks, &s.runners.Cleanups, func() { _ = kill() })
	}
	p := proc.Adopt(r.Cmd, r.Wait, r.Stdin, stdout, stderr, spec.Stdin, spec.Stdout, spec.Stderr, hooks)
	if early {
		e.Attach(p)
	}
	_, err := r.Ctl.Write(helper.EncodeRun(spec.Dir, proc.MarkedEnv(spec.Env, runMarker), req.Code, req.Args))
	if !early {
		_ = r.Ctl.Close()
	}
	slog.Debug("warm run", "id", spec.ID, "kind", req.Kind, "mode", "subprocess")
	if err != nil {
		return nil, warm.FailedHandOver(p, "warm runner", err)
	}
	return p, nil
}

// Prewarm starts a warm runner for runs like spec ahead of the first such
// run. Specs that cannot run warm are ignored.
func (s *Backend) Prewarm(spec sandbox.Spec) {
	if req, ok := s.warmRequest(spec); ok {
		s.runners.Pool.Demand(req)
	}
}

// Close stops the warm runners. The backend must not be used afterwards.
func (s *Backend) Close() error {
	s.runners.Close()
	return nil
}
