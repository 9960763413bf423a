package container

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/warm"
)

// Warm node containers. Node cannot take descriptors over a socket, so a
// node runner's stdio and control channels are FIFOs the server makes in
// the runner's directory (bound at /workspace until take) and the
// container's shell opens for node before it starts: stdin, stdout, stderr,
// the run message on fd 3 and "R" and the exit status on fd 4. Only node
// (and what it starts) holds the output FIFOs, so, as for python, a run is
// over for the server once the stub has reported its status (runner_node.js)
// and both outputs have ended; the container's exit and removal follow.
// The image must have /bin/sh.

// nodeFIFOs are the server ends of a node runner's FIFOs.
type nodeFIFOs struct {
	in, out, err, msg, status *os.File
}

// fifoNames are the FIFOs' names in the runner's directory, in the order
// of nodeFIFOs.
var fifoNames = [5]string{".codexec-in", ".codexec-out", ".codexec-err", ".codexec-msg", ".codexec-status"}

// makeFIFOs creates the FIFOs in dir and opens the server's ends without
// blocking: the writing ends (stdin, message) and the status read end
// O_RDWR, so they never see a missing peer; stdout and stderr read-only,
// so they end when node and its children have closed them.
func makeFIFOs(dir string) (*nodeFIFOs, error) {
	var files [5]*os.File
	modes := [5]int{os.O_RDWR, os.O_RDONLY, os.O_RDONLY, os.O_RDWR, os.O_RDWR}
	for i, name := range fifoNames {
		p := filepath.Join(dir, name)
		err := syscall.Mkfifo(p, 0o600)
		if err == nil {
			err = os.Chmod(p, 0o666)
		}
		if err == nil {
			files[i], err = os.OpenFile(p, modes[i]|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		}
		if err != nil {
			for _, f := range files[:i] {
				_ = f.Close()
			}
			return nil, err
		}
	}
	return &nodeFIFOs{in: files[0], out: files[1], err: files[2], msg: files[3], status: files[4]}, nil
}

func (f *nodeFIFOs) close() {
	for _, file := range []*os.File{f.in, f.out, f.err, f.msg, f.status} {
		if file != nil {
			_ = file.Close()
		}
	}
}

// nodeRedirect gives node the FIFOs as its descriptors (see warmEntry).
var nodeRedirect = func() string {
	ws := sandbox.WorkspacePath + "/"
	return fmt.Sprintf(`<%s%s >%s%s 2>%s%s 3<%s%s 4>%s%s`,
		ws, fifoNames[0], ws, fifoNames[1], ws, fifoNames[2], ws, fifoNames[3], ws, fifoNames[4])
}()

// launchNodeRunner starts a node container runner and waits until it is
// ready.
func (c *Backend) launchNodeRunner(req warm.Request, r *ctRunner) error {
	fifos, err := makeFIFOs(r.dir)
	if err != nil {
		return err
	}
	spec := req.Base
	spec.Dir = r.dir
	// "4" tells the stub its status descriptor.
	cmd := warmEntry(containerArgv(append(slices.Clip(spec.Argv), "4"), spec.Dir), nodeRedirect)
	if _, err := c.startRunnerCLI(spec, r, cmd); err != nil {
		fifos.close()
		return err
	}
	// node's stdio are the FIFOs: the CLI's own pipes carry nothing of the
	// run. Its stdin stays open (closing it may end an attached CLI).
	drainCLIOutput(r)
	cliIn := r.Stdin
	r.Stdin, r.Ctl = fifos.in, fifos.status
	r.node, r.cliIn = fifos, cliIn
	err = r.AwaitReady()
	var pid int
	if err == nil {
		pid, err = c.containerPid(r.name)
	}
	if err == nil {
		err = r.inspect(pid)
	}
	if err != nil {
		r.CloseFiles()
		fifos.close()
		_ = cliIn.Close()
		r.KillGroup()
		return err
	}
	return nil
}

// containerPid asks the CLI for the host pid of the container's first
// process.
func (c *Backend) containerPid(name string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.cli, "inspect", "--format", "{{.State.Pid}}", name).Output()
	if err != nil {
		return 0, fmt.Errorf("%s inspect %s: %w", c.opts.CLI, name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s inspect %s: no pid in %q", c.opts.CLI, name, out)
	}
	return pid, nil
}
