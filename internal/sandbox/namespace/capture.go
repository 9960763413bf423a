//go:build linux

package namespace

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/capture"
	"github.com/codexec/codexec/internal/sandbox/helper"
	"github.com/codexec/codexec/internal/sandbox/warm"
)

// A captured network (Options.CaptureSpec; sandbox.CaptureSpec says what
// it is for). The server starts sandbox-init in a network namespace of its
// own (CLONE_NEWNET at the fork): it belongs to the server's user
// namespace, not to bwrap's nested one, so the program — without
// capabilities there — can neither change its routes and links nor bind
// its privileged ports. sandbox-init, still root, brings loopback up, makes
// the listening sockets, sends them to the server (helper.CaptureOption)
// and closes its copies; bwrap then shares that namespace instead of
// making an empty one. The server wraps the sockets into a sandbox.Capture
// (package capture) and hands it to the run's egress owner, or closes it:
//
//	cold run with Spec.Egress   sockets made for the run, served at start
//	cold run without            no sockets (as without a CaptureSpec;
//	                            a pooled launcher's namespace stays empty)
//	warm runner                 sockets made at the runner's start, kept;
//	                            served or closed when a run takes it,
//	                            closed with an unused runner
//	forked python run           the zygote's child makes them in its own
//	                            namespaces and sends them with its "R"
//
// A connection the program opens before the owner serves waits in the
// listen backlog; once closed, connections are refused at once.

// captureConnTimeout bounds the wait for a sandbox's sockets; a launcher
// that fails closes its end first, so only a stuck one waits this long.
const captureConnTimeout = warm.ReadyTimeout

// capturing reports whether the backend makes sockets in its sandboxes.
func (n *Backend) capturing() bool { return n.opts.CaptureSpec.Enabled() }

// sockets is the backend's CaptureSpec in the helper's terms.
func (n *Backend) sockets() helper.Sockets { return capture.Sockets(n.opts.CaptureSpec) }

// runSockets is what a cold run's sandbox makes: the backend's sockets
// when the run has an egress owner to serve them, else none.
func (n *Backend) runSockets(spec sandbox.Spec) (helper.Sockets, bool) {
	if !n.capturing() || spec.Egress == nil {
		return helper.Sockets{}, false
	}
	return n.sockets(), true
}

// receiveCapture reads the sockets s from conn (capture.Receive).
func receiveCapture(conn *os.File, tag byte, s helper.Sockets) (*sandbox.Capture, error) {
	return capture.Receive(conn, tag, s, captureConnTimeout)
}

// newNet makes a child started by cmd begin in a network namespace of its
// own, made by the fork and owned by the server's user namespace. (A
// server without root would add CLONE_NEWUSER here, with its id maps.)
func newNet(cmd *exec.Cmd) {
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNET
}

// startCaptured starts cmd, a direct sandbox-init (coldCmd), in a network
// namespace of its own with the sockets s, and returns how to wait for it
// and the sockets it sent. On error nothing of it is left running.
func startCaptured(cmd *exec.Cmd, s helper.Sockets) (wait func() error, c *sandbox.Capture, retErr error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	_ = unix.SetNonblock(fds[0], true)
	conn, child := os.NewFile(uintptr(fds[0]), "capture"), os.NewFile(uintptr(fds[1]), "capture-child")
	defer conn.Close()
	k := strconv.Itoa(len(cmd.ExtraFiles))
	cmd.ExtraFiles = append(cmd.ExtraFiles, child)
	cmd.Args = slices.Insert(cmd.Args, 2, helper.CaptureOption, k, s.String())
	newNet(cmd)
	wait, err = proc.StartTracked(cmd)
	_ = child.Close()
	if err != nil {
		return nil, nil, err
	}
	if c, err = receiveCapture(conn, helper.CaptureTag, s); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = wait()
		return nil, nil, err
	}
	return wait, c, nil
}

// captureFile is a CaptureSpec file as bound in every sandbox: host is
// the source, dest the path in the sandbox it is bound over.
type captureFile struct{ host, dest string }

// captureFiles resolves where each of the backend's captured files goes
// (fileDest) and which of them the template must hold a placeholder for.
func captureFiles(c *sandbox.CaptureSpec) (files []captureFile, placeholders []string, err error) {
	if !c.Enabled() {
		return nil, nil, nil
	}
	for _, f := range c.Files {
		dest, fromHost, err := fileDest(f.Target)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, captureFile{f.Host, dest})
		if !fromHost && strings.HasPrefix(dest, "/etc/") {
			placeholders = append(placeholders, dest)
		}
	}
	return files, placeholders, nil
}

// fileDest is where a file for target is bound in a sandbox. A target in a
// tree the sandbox sees from the host (/usr, /etc/ssl, …) must exist
// there: a symbolic link (Fedora's /etc/ssl/certs) is followed on the host
// and the file bound over where it leads, which must be in such a tree too
// (fromHost). Any other target lies in bwrap's own root (/etc/resolv.conf
// is never the host's: a link to a systemd stub there would dangle), where
// bwrap creates it; in template mode the template's /etc holds a
// placeholder for it.
func fileDest(target string) (dest string, fromHost bool, err error) {
	if !hostTree(target) {
		return target, false, nil
	}
	dest, err = filepath.EvalSymlinks(target)
	if err != nil {
		return "", false, fmt.Errorf("captured network: %s lies in a directory sandboxes see from this host and must exist: %w", target, err)
	}
	if !hostTree(dest) {
		return "", false, fmt.Errorf("captured network: %s leads to %s, which sandboxes do not see", target, dest)
	}
	return dest, true, nil
}

// hostTree reports whether p lies in a tree sandboxes see from the host.
func hostTree(p string) bool {
	for _, t := range append([]string{"/usr", fontCache}, etcFiles...) {
		if p == t || strings.HasPrefix(p, t+"/") {
			return true
		}
	}
	return false
}
