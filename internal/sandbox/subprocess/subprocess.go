// Package subprocess is the light sandbox backend: programs run as plain
// host processes, with python, node and bash runs served by warm runners
// (warm.go) and a file size cap through the helper (fsize.go).
package subprocess

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codexec/codexec/internal/confine"
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/helper"
	"github.com/codexec/codexec/internal/sandbox/warm"
)

// Backend runs programs as plain host processes: stripped environment,
// own working directory, own process group, no resource limits but a
// maximum file size (sandbox.Limits.DiskBytes as RLIMIT_FSIZE) and full filesystem
// access (see SECURITY.md). Children that escape the process group
// (setsid, double fork) are found through the child-subreaper mechanism and
// their run marker (package proc) and killed when the run ends; if the server
// is killed, its watchdog kills the runs' process groups and marked processes
// (proc.GuardGroup), and the next server to start kills what is left.
//
// With pool options, python, node and bash runs are served by warm runners
// (warm.go).
type Backend struct {
	runners warm.Host
}

var subreaperOnce sync.Once

// New returns the subprocess backend and makes the server a child
// subreaper so that orphaned descendants of runs are re-parented to it.
// pool configures warm runners; a zero Size disables them.
func New(pool sandbox.PoolOptions) *Backend {
	subreaperOnce.Do(becomeSubreaper)
	proc.SweepDeadRunsOnce()
	s := &Backend{}
	if pool.Size > 0 {
		s.runners.Pool = warm.NewPool(pool, s.newRunner)
	}
	return s
}

// Name returns "subprocess".
func (*Backend) Name() string { return "subprocess" }

// Isolated returns false: subprocess mode confines nothing but the environment.
func (*Backend) Isolated() bool { return false }

// User is the server's own identity: programs run with its rights.
func (*Backend) User() confine.Identity { return confine.Identity{} }

// Start starts spec as a host process in its own process group, or in a
// warm runner when spec can run in one and one is ready.
func (s *Backend) Start(_ context.Context, spec sandbox.Spec) (sandbox.Process, error) {
	if len(spec.Argv) == 0 {
		return nil, fmt.Errorf("sandbox: empty argv")
	}
	if req, ok := s.warmRequest(spec); ok {
		return s.runners.Pool.Serve(req, func(r warm.Runner) (*proc.HostProc, error) {
			p, err := s.startWarm(spec, req, r.(*subRunner))
			if err == nil {
				p.SetPath(proc.PathWarm)
			}
			return p, err
		},
			func() (*proc.HostProc, error) { return s.startCold(spec) })
	}
	return warm.AsProcess(s.startCold(spec))
}

// warmRequest returns the warm request serving spec, if a runner can.
func (s *Backend) warmRequest(spec sandbox.Spec) (warm.Request, bool) {
	req, ok := warm.Parse(spec)
	if !ok || s.runners.Pool == nil || (req.Exec && !helper.ExecRunners) {
		return warm.Request{}, false
	}
	return req, true
}

// startCold starts spec as a new process.
func (s *Backend) startCold(spec sandbox.Spec) (*proc.HostProc, error) {
	argv, err := fsizeArgv(rewriteProgramPath(spec.Argv, spec.ProgramDir), spec.Limits.DiskBytes)
	if err != nil {
		return nil, err
	}
	marker := proc.NewRunMarker(spec.ID)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = proc.MarkedEnv(spec.Env, marker)
	cmd.SysProcAttr = groupAttr()
	// The group is the watchdog's until the run is released (killed).
	p, err := proc.Start(cmd, spec.Stdin, spec.Stdout, spec.Stderr, proc.Hooks{Signal: groupSignal(cmd, marker),
		Cleanup: func() error { proc.UnguardGroup(cmd.Process.Pid); return nil }})
	if err != nil {
		return nil, fmt.Errorf("sandbox: start %s: %w", spec.Argv[0], err)
	}
	proc.GuardGroup(cmd.Process.Pid)
	p.SetPath(proc.PathCold)
	p.MeasureTree() // the program itself: its reaped tree is the run
	return p, nil
}

// groupSignal signals cmd's process group; a SIGKILL also kills the
// orphans whose environment carries any of the run markers (package proc).
// Markers, not HOME: runs in one working_dir share their HOME.
func groupSignal(cmd *exec.Cmd, markers ...string) func(syscall.Signal) error {
	return func(sig syscall.Signal) error {
		err := syscall.Kill(-cmd.Process.Pid, sig)
		if sig == syscall.SIGKILL {
			for _, m := range markers {
				proc.SweepOrphans(m)
			}
		}
		if err == syscall.ESRCH {
			return nil
		}
		return err
	}
}

// rewriteProgramPath maps sandbox.ProgramPath-prefixed arguments to the host dir.
func rewriteProgramPath(argv []string, hostDir string) []string {
	if hostDir == "" {
		return argv
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		if strings.HasPrefix(a, sandbox.ProgramPath) {
			a = hostDir + strings.TrimPrefix(a, sandbox.ProgramPath)
		}
		out[i] = a
	}
	return out
}

// AwaitWarm waits up to d for a ready runner of kind (WarmPython,
// WarmNode) and returns its kind's state; false if none became ready.
func (s *Backend) AwaitWarm(kind string, d time.Duration) (sandbox.PoolStat, bool) {
	return s.runners.AwaitWarm(kind, d)
}

// PoolStats returns the state of the warm runners.
func (s *Backend) PoolStats() []sandbox.PoolStat { return s.runners.PoolStats() }

// PoolTallies returns how many runs of each kind were served warm and cold.
func (s *Backend) PoolTallies() []sandbox.PoolTally { return s.runners.PoolTallies() }
