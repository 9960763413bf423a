package container

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/capture"
)

// A cold run with a network capture starts behind a gate: the container's
// first process is a shell that says it is up on one FIFO and waits for a
// line on another before it becomes the run's command (exec: the deadline's
// `timeout` stays the first process). Meanwhile the server finds the
// container's first process, makes the sockets in its network namespace
// (capture.go) and hands them to the run's egress; only then does it open
// the gate. The FIFOs lie in a root-owned directory of the server's (mode
// 0711) bound into this container alone, and are removed once the gate is
// open. If the server dies first, the FIFO ends and the shell exits 125.

// gatePath is where a gated container sees its gate directory.
const gatePath = "/run/codexec-gate"

// Names of the gate FIFOs.
const (
	gateReady = "ready" // the container writes a line when it is up
	gateGo    = "go"    // the server writes "go" to let the command run
)

// gateTimeout bounds the wait for a gated container to come up.
const gateTimeout = 60 * time.Second

// gateEntry wraps a container command cmd behind the gate. As in warmEntry,
// the go FIFO is opened read-write first (fd 6) only so that opening its
// read end cannot block, then fd 6 is closed: the server's end is the only
// writer left, and its death ends the read.
func gateEntry(cmd []string) []string {
	g := gatePath + "/"
	script := `exec 6<>` + g + gateGo + ` 8<` + g + gateGo + ` 6<&-
echo up 1<>` + g + gateReady + `
read -r v <&8 && [ "$v" = go ] || exit 125
exec 8<&- "$@"`
	return append([]string{"sh", "-c", script, "sh"}, cmd...)
}

// gate is the server's side of one container's gate: its directory, the
// server's ends of the FIFOs, and where podman writes the container's pid
// (beside the directory, not in it).
type gate struct {
	dir, pidFile string
	ready, open  *os.File
}

// gateIfCaptured puts the container command ctCmd behind a new gate when
// the backend captures the network, and returns the gate (nil otherwise),
// the command and the run options the gate needs.
func (c *Backend) gateIfCaptured(ctCmd []string) (*gate, []string, []string, error) {
	if !c.opts.CaptureSpec.Enabled() {
		return nil, ctCmd, nil, nil
	}
	g, err := newGate(c.warmRoot)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sandbox: network capture: %w", err)
	}
	return g, gateEntry(ctCmd), g.runArgs(c.podman()), nil
}

// newGate makes a gate directory below root with its FIFOs and opens the
// server's ends (read-write, so that neither side ever waits for a peer).
func newGate(root string) (_ *gate, retErr error) {
	dir, err := os.MkdirTemp(root, "g-")
	if err != nil {
		return nil, err
	}
	g := &gate{dir: dir, pidFile: dir + ".pid"}
	defer func() {
		if retErr != nil {
			g.close()
		}
	}()
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	files := [2]**os.File{&g.ready, &g.open}
	for i, name := range []string{gateReady, gateGo} {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			return nil, err
		}
		if err := os.Chmod(p, 0o666); err != nil {
			return nil, err
		}
		if *files[i], err = os.OpenFile(p, os.O_RDWR|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// runArgs bind the gate directory into the container and, for podman,
// ask for the container's pid in pidFile (cheaper than an inspect).
func (g *gate) runArgs(podman bool) []string {
	a := []string{"-v", g.dir + ":" + gatePath + ":ro"}
	if podman {
		a = append(a, "--pidfile", g.pidFile)
	}
	return a
}

// awaitUp waits for the container's line on the ready FIFO, giving up when
// exited is closed (the CLI ended) or gateTimeout passes.
func (g *gate) awaitUp(exited <-chan struct{}) error {
	_ = g.ready.SetReadDeadline(time.Now().Add(gateTimeout))
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-exited:
			_ = g.ready.SetReadDeadline(time.Now())
		case <-stop:
		}
	}()
	buf := make([]byte, 3)
	_, err := g.ready.Read(buf)
	if err == nil {
		return nil
	}
	select {
	case <-exited:
		return errors.New("the container did not come up: the engine ended it first (its reason is in the run's error output)")
	default:
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("the container did not come up within %v: the engine may be overloaded; try again", gateTimeout)
	}
	return fmt.Errorf("the container did not come up: %w", err)
}

// release lets the container's command run.
func (g *gate) release() error {
	_, err := g.open.WriteString("go\n")
	return err
}

// close closes the server's ends (a shell still waiting exits 125) and
// removes the directory: the container then sees an empty one. A nil gate
// has nothing to close.
func (g *gate) close() {
	if g == nil {
		return
	}
	for _, f := range []*os.File{g.ready, g.open} {
		if f != nil {
			_ = f.Close()
		}
	}
	_ = os.RemoveAll(g.dir)
	_ = os.Remove(g.pidFile)
}

// pidFileWait bounds the wait for podman's pid file once the container is
// up (podman writes it right after the runtime has started the container).
const pidFileWait = 2 * time.Second

// containerPid returns the host pid of the gated container's first process
// (the shell waiting at the gate): from podman's pid file when there is
// one, else from the engine's inspect. Either way the pid is trusted only
// if that process holds the gate's go FIFO open, which no process outside
// this container can.
func (g *gate) containerPid(c *Backend, name string) (int, error) {
	pid := 0
	if c.podman() {
		for end := time.Now().Add(pidFileWait); pid == 0 && time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
			b, _ := os.ReadFile(g.pidFile)
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	if pid <= 0 {
		var err error
		if pid, err = c.containerPid(name); err != nil {
			return 0, err
		}
	}
	if !holdsFile(pid, 8, g.open) {
		return 0, fmt.Errorf("process %d is not the container's shell waiting at its gate", pid)
	}
	return pid, nil
}

// holdsFile reports whether process pid has f open as descriptor fd.
func holdsFile(pid, fd int, f *os.File) bool {
	var theirs, ours unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(fd), &theirs) != nil {
		return false
	}
	if unix.Fstat(int(f.Fd()), &ours) != nil {
		return false
	}
	return theirs.Dev == ours.Dev && theirs.Ino == ours.Ino
}

// captureCold opens the gate g of the started cold run p in the container
// name once its sockets exist and are handed over (spec.Egress.Serve, or
// closed when the run has no egress); without a gate there is nothing to
// do. On error the run is killed and released and the error says why.
func (c *Backend) captureCold(p *proc.HostProc, g *gate, name string, spec sandbox.Spec) (retErr error) {
	if g == nil {
		return nil
	}
	defer g.close()
	defer func() {
		if retErr != nil {
			_ = p.Kill()
			p.KillLeader()
			_, _ = p.Wait()
			retErr = errors.Join(fmt.Errorf("sandbox: %s: %w", c.opts.CLI, retErr), p.Release(0))
		}
	}()
	exited := make(chan struct{})
	go func() { _, _ = p.Wait(); close(exited) }()
	if err := g.awaitUp(exited); err != nil {
		return err
	}
	pid, err := g.containerPid(c, name)
	if err != nil {
		return err
	}
	sockets, err := captureIn(pid, c.opts.CaptureSpec)
	if err != nil {
		return err
	}
	capture.Hand(spec.Egress, sockets)
	return g.release()
}
