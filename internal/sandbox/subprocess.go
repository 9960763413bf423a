package sandbox

import (
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
// killed when the run ends.
type Subprocess struct{}

var subreaperOnce sync.Once

// NewSubprocess returns the subprocess backend and makes the server a child
// subreaper so that orphaned descendants of runs are re-parented to it.
func NewSubprocess() *Subprocess {
	subreaperOnce.Do(func() {
		const prSetChildSubreaper = 36
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	})
	return &Subprocess{}
}

// Name returns "subprocess".
func (*Subprocess) Name() string { return "subprocess" }

// Isolated returns false: subprocess mode confines nothing but the environment.
func (*Subprocess) Isolated() bool { return false }

// Start starts spec as a host process in its own process group.
func (s *Subprocess) Start(_ context.Context, spec Spec) (Process, error) {
	if len(spec.Argv) == 0 {
		return nil, fmt.Errorf("sandbox: empty argv")
	}
	argv := rewriteProgramPath(spec.Argv, spec.ProgramDir)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	marker := "HOME=" + envValue(spec.Env, "HOME")
	var p *HostProc
	hooks := Hooks{
		Signal: func(sig syscall.Signal) error {
			err := syscall.Kill(-p.Pid(), sig)
			if sig == syscall.SIGKILL {
				sweepOrphans(marker)
			}
			if err == syscall.ESRCH {
				return nil
			}
			return err
		},
	}
	var err error
	p, err = StartHostProc(cmd, spec.Stdin, spec.Stdout, spec.Stderr, hooks)
	if err != nil {
		return nil, fmt.Errorf("sandbox: start %s: %w", argv[0], err)
	}
	limitFileSize(p.Pid(), spec.Limits.DiskBytes)
	return p, nil
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

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
