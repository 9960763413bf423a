package sandbox

import (
	"github.com/codexec/codexec/internal/confine"
	"github.com/codexec/codexec/internal/proc"

	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// Subprocess runs programs as plain host processes: stripped environment,
// own working directory, own process group, no resource limits but a
// maximum file size (Limits.DiskBytes as RLIMIT_FSIZE) and full filesystem
// access (see SECURITY.md). Children that escape the process group
// (setsid, double fork) are found through the child-subreaper mechanism and
// their run marker (runmark.go) and killed when the run ends; if the server
// is killed, the next server to start kills them.
//
// With pool options, python and node runs are served by warm runners
// (subprocess_warm.go).
type Subprocess struct {
	warmHost
}

var subreaperOnce sync.Once

// NewSubprocess returns the subprocess backend and makes the server a child
// subreaper so that orphaned descendants of runs are re-parented to it.
// pool configures warm runners; a zero Size disables them.
func NewSubprocess(pool PoolOptions) *Subprocess {
	subreaperOnce.Do(func() {
		const prSetChildSubreaper = 36
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	})
	proc.SweepDeadRunsOnce()
	s := &Subprocess{}
	if pool.Size > 0 {
		s.warm = newWarmPool(pool, s.newRunner)
	}
	return s
}

// Name returns "subprocess".
func (*Subprocess) Name() string { return "subprocess" }

// Isolated returns false: subprocess mode confines nothing but the environment.
func (*Subprocess) Isolated() bool { return false }

// User is the server's own identity: programs run with its rights.
func (*Subprocess) User() confine.Identity { return confine.Identity{} }

// Start starts spec as a host process in its own process group, or in a
// warm runner when spec can run in one and one is ready.
func (s *Subprocess) Start(_ context.Context, spec Spec) (Process, error) {
	if len(spec.Argv) == 0 {
		return nil, fmt.Errorf("sandbox: empty argv")
	}
	if req, ok := parseWarm(spec); ok && s.warm != nil {
		return s.warm.serve(req, func(r warmRunner) (*proc.HostProc, error) { return s.startWarm(spec, req, r.(*subRunner)) },
			func() (*proc.HostProc, error) { return s.startCold(spec) })
	}
	return asProcess(s.startCold(spec))
}

// startCold starts spec as a new process.
func (s *Subprocess) startCold(spec Spec) (*proc.HostProc, error) {
	argv, err := fsizeArgv(rewriteProgramPath(spec.Argv, spec.ProgramDir), spec.Limits.DiskBytes)
	if err != nil {
		return nil, err
	}
	marker := proc.NewRunMarker(spec.ID)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = proc.MarkedEnv(spec.Env, marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p, err := proc.Start(cmd, spec.Stdin, spec.Stdout, spec.Stderr, proc.Hooks{Signal: groupSignal(cmd, marker)})
	if err != nil {
		return nil, fmt.Errorf("sandbox: start %s: %w", spec.Argv[0], err)
	}
	return p, nil
}

// groupSignal signals cmd's process group; a SIGKILL also kills the
// orphans whose environment carries any of the run markers (runmark.go).
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

// rewriteProgramPath maps ProgramPath-prefixed arguments to the host dir.
func rewriteProgramPath(argv []string, hostDir string) []string {
	if hostDir == "" {
		return argv
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		if strings.HasPrefix(a, ProgramPath) {
			a = hostDir + strings.TrimPrefix(a, ProgramPath)
		}
		out[i] = a
	}
	return out
}
