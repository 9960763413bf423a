package rootless

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// caps are what the server holds in its own user namespace: mounting,
// joining its sandboxes' mount namespaces, making and configuring their
// network namespaces, and acting on its own files there as root mode does.
// They are ambient, so the helpers the server starts (sandbox-init) hold
// them too; sandbox-init drops them before bubblewrap.
var caps = []uintptr{unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH, unix.CAP_FOWNER,
	unix.CAP_NET_BIND_SERVICE, unix.CAP_NET_ADMIN, unix.CAP_SYS_CHROOT, unix.CAP_SYS_PTRACE, unix.CAP_SYS_ADMIN}

// Probe says whether this user can run the namespace sandbox without
// root: user namespaces allowed, and bubblewrap able to make its
// namespaces. The error names what failed and the fix.
func Probe(ctx context.Context) error {
	restricted := userNamespaces("")
	if restricted != nil && !errors.Is(restricted, errAppArmor) {
		return restricted
	}
	// Under Ubuntu's AppArmor restriction, profiles may allow bwrap and
	// codexec: only trying tells.
	if err := probe(ctx); err != nil {
		if restricted != nil {
			return fmt.Errorf("%w (%v)", restricted, err)
		}
		return err
	}
	return nil
}

// probe tries what the rootless server needs: bwrap building a sandbox as
// this user, and this binary mounting in a user namespace of its own.
func probe(ctx context.Context) error {
	bwrap := "/usr/bin/bwrap"
	if _, err := os.Stat(bwrap); err != nil {
		if bwrap, err = exec.LookPath("bwrap"); err != nil {
			return errors.New("bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
		"--proc", "/proc", "--dev", "/dev", "--", "/bin/true")
	cmd.Env = []string{}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("bubblewrap cannot make a sandbox as this user: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return probeSelf(ctx)
}

// ProbeCommand is the hidden command the binary runs as in a user and
// mount namespace of its own to show it can mount there (RunProbe).
const ProbeCommand = "sandbox-userns-probe"

// probeSelf runs ProbeCommand as Reexec would start the server.
func probeSelf(ctx context.Context) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, ProbeCommand)
	cmd.Env = []string{}
	cmd.SysProcAttr = namespaceAttr(os.Getuid(), os.Getgid())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("codexec cannot mount in a user namespace of its own: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// RunProbe is ProbeCommand's body: mount a tmpfs on the temp directory
// (in this namespace only, gone with it). It returns the exit status.
func RunProbe() int {
	if err := unix.Mount("codexec-probe", os.TempDir(), "tmpfs", 0, "size=4k"); err != nil {
		fmt.Fprintln(os.Stderr, "mount:", err)
		return 1
	}
	return 0
}

// namespaceAttr starts a child in a new user and mount namespace owned
// by uid/gid, keeping those ids, with caps as ambient capabilities.
func namespaceAttr(uid, gid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		AmbientCaps: caps,
		Pdeathsig:   syscall.SIGKILL,
	}
}

// Reexec runs this binary again with args, in a new user and mount
// namespace owned by the calling user, marked as Inside, with this
// process's stdio, and returns its exit status once it ends. Termination
// signals are passed on; if this process dies, the server dies with it.
// An error means the server could not be started (nothing ran).
func Reexec(args []string) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		return 0, errors.New("rootless: already root")
	}
	cmd := exec.Command(exe, args...)
	cmd.Args[0] = os.Args[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), innerEnv+"="+strconv.Itoa(uid)+":"+strconv.Itoa(gid))
	cmd.SysProcAttr = namespaceAttr(uid, gid)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("rootless: start the server in its own user namespace: %w", err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	return exitStatus(cmd, err), nil
}

// exitStatus is the shell's view of how the server ended.
func exitStatus(cmd *exec.Cmd, err error) int {
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled():
		return 128 + int(ws.Signal())
	case cmd.ProcessState != nil:
		return cmd.ProcessState.ExitCode()
	case err != nil:
		return 1
	}
	return 0
}
