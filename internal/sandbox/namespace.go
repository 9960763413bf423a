package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// SandboxUID is the unprivileged host uid (and gid) isolated runs use.
const SandboxUID = 65534

// etcFiles are the only host /etc entries visible in the namespace sandbox:
// enough for the dynamic linker, name lookups of the sandbox user, TLS roots
// and time zones. Missing ones are skipped.
var etcFiles = []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd", "/etc/group",
	"/etc/nsswitch.conf", "/etc/hosts", "/etc/localtime", "/etc/ssl", "/etc/ca-certificates", "/etc/alternatives",
	"/etc/mime.types", "/etc/protocols", "/etc/services"}

// Namespace runs programs under bubblewrap in fresh user, pid, net, ipc,
// uts, cgroup and mount namespaces as host uid 65534, with only /usr (and
// its /bin, /lib… links), a few /etc files, the workspace (read-write), a
// size-capped private /tmp, fresh /proc and /dev, no network but loopback,
// all capabilities dropped, no_new_privs, a seccomp deny-list, and cgroup
// limits on memory, processes and CPU. Killing the run kills its cgroup.
type Namespace struct {
	bwrap   string
	self    string
	cgroups *Cgroups
	extra   []string
}

// NewNamespace checks that the backend can work here: bubblewrap present,
// cgroups usable, and a trial sandbox starts. self is the codexec binary
// (for the sandbox-init helper); extraRO are host paths (e.g. interpreters
// outside /usr) to expose read-only.
func NewNamespace(self string, extraRO []string) (*Namespace, error) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		if _, statErr := os.Stat("/usr/bin/bwrap"); statErr != nil {
			return nil, errors.New("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
		}
		bwrap = "/usr/bin/bwrap"
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("namespace mode needs the server to run as root (to place runs in cgroups and drop to uid 65534)")
	}
	cg, err := DetectCgroups()
	if err != nil {
		return nil, err
	}
	ns := &Namespace{bwrap: bwrap, self: self, cgroups: cg, extra: outsideUsr(extraRO)}
	return ns, nil
}

// outsideUsr keeps the paths not already visible through /usr.
func outsideUsr(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p != "" && !strings.HasPrefix(p, "/usr/") {
			out = append(out, p)
		}
	}
	return out
}

// Name returns "namespace".
func (*Namespace) Name() string { return "namespace" }

// Isolated returns true.
func (*Namespace) Isolated() bool { return true }

// CgroupVersion reports the cgroup version in use.
func (n *Namespace) CgroupVersion() string { return n.cgroups.Version() }

// Start starts spec inside a fresh sandbox.
func (n *Namespace) Start(_ context.Context, spec Spec) (_ Process, retErr error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("sandbox: empty argv")
	}
	if spec.Network {
		return nil, errors.New("sandbox: the namespace backend never grants network access")
	}
	group, err := n.cgroups.create(spec.ID+"-"+strconv.Itoa(os.Getpid()), spec.Limits)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			_ = group.remove()
		}
	}()
	if err := prepareWorkspace(spec.Dir); err != nil {
		return nil, err
	}
	for _, m := range spec.Mounts {
		if !m.ReadOnly {
			if err := prepareWorkspace(m.Host); err != nil {
				return nil, err
			}
		}
	}
	filter, err := seccompFile()
	if err != nil {
		return nil, err
	}
	defer filter.Close()
	cmd := exec.Command(n.self, n.initArgs(group, spec)...)
	cmd.Env = spec.Env
	cmd.ExtraFiles = []*os.File{filter}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var p *HostProc
	hooks := Hooks{
		Signal: func(sig syscall.Signal) error {
			if sig == syscall.SIGKILL {
				group.kill()
				_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
				return nil
			}
			group.signal(sig, p.Pid())
			return nil
		},
		AfterWait: func(e *Exit) { n.refineExit(group, e) },
		Cleanup:   group.remove,
	}
	p, err = StartHostProc(cmd, spec.Stdin, spec.Stdout, spec.Stderr, hooks)
	if err != nil {
		return nil, fmt.Errorf("sandbox: start bwrap: %w", err)
	}
	return p, nil
}

// refineExit turns bwrap's 128+N exit into a signal and notes OOM kills.
func (n *Namespace) refineExit(g *runGroup, e *Exit) {
	if e.Code > 128 && e.Code < 128+65 {
		e.Signal, e.Code = e.Code-128, -1
	}
	e.OOMKilled = g.oomKilled()
	e.MemoryPeakBytes = g.memoryPeak()
}

func (n *Namespace) initArgs(g *runGroup, spec Spec) []string {
	args := []string{InitCommand, "--procs", strings.Join(g.procsFiles(), ","),
		"--uid", strconv.Itoa(SandboxUID), "--gid", strconv.Itoa(SandboxUID), "--", n.bwrap}
	args = append(args, n.bwrapArgs(spec)...)
	return append(append(args, "--"), spec.Argv...)
}

// bwrapArgs builds the sandbox's mount table and namespace options.
func (n *Namespace) bwrapArgs(spec Spec) []string {
	a := []string{"--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--uid", strconv.Itoa(SandboxUID), "--gid", strconv.Itoa(SandboxUID), "--hostname", "codexec",
		"--disable-userns", "--seccomp", "3",
		"--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev"}
	a = append(a, rootLinks()...)
	for _, f := range etcFiles {
		a = append(a, "--ro-bind-try", f, f)
	}
	for _, p := range n.extra {
		a = append(a, "--ro-bind", fdPrefix+p, p)
	}
	size := spec.Limits.DiskBytes
	if size <= 0 {
		size = 256 << 20
	}
	a = append(a, "--size", strconv.FormatInt(size, 10), "--tmpfs", "/tmp")
	a = append(a, "--bind", fdPrefix+spec.Dir, spec.Dir, "--chdir", spec.Dir)
	if spec.ProgramDir != "" {
		a = append(a, "--ro-bind", fdPrefix+spec.ProgramDir, ProgramPath)
	}
	for _, m := range spec.Mounts {
		target := m.Target
		if target == "" {
			target = m.Host
		}
		if _, err := os.Stat(m.Host); err != nil {
			continue
		}
		flag := "--bind"
		if m.ReadOnly {
			flag = "--ro-bind"
		}
		a = append(a, flag, fdPrefix+m.Host, target)
	}
	return a
}

// rootLinks recreates /bin, /lib, /lib64, /sbin as the host has them
// (symlinks into /usr on merged-/usr systems, read-only binds otherwise).
func rootLinks() []string {
	var a []string
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if target, err := os.Readlink(d); err == nil {
			a = append(a, "--symlink", target, d)
		} else if _, err := os.Stat(d); err == nil {
			a = append(a, "--ro-bind", d, d)
		}
	}
	return a
}

// prepareWorkspace makes a codexec-created workspace writable by the
// sandbox uid. Directories an operator or agent named (working_dir) keep
// their ownership: the sandbox can write there only where uid 65534 may.
func prepareWorkspace(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("sandbox: workspace: %w", err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid == 0 && isCodexecWorkspace(dir) {
		return os.Chown(dir, SandboxUID, SandboxUID)
	}
	return nil
}

// isCodexecWorkspace reports whether dir is a per-run directory codexec
// created (named exec_…, sess_…, ctx-… or health_…).
func isCodexecWorkspace(dir string) bool {
	base := filepath.Base(dir)
	for _, p := range []string{"exec_", "sess_", "ctx-", "health_"} {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	return false
}
