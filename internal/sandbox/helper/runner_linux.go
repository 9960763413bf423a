package helper

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Exec runners. A warm bash is this helper waiting on fd 3 (its runner's
// control socket) inside a finished sandbox, and executing bash when it
// gets its run. The stub is the helper, not a python or bash waiting
// (measured on the project's 2-core VM):
//   - the helper is already the last step of every namespace sandbox
//     (sandbox-landlock), so a bash runner starts no interpreter at all:
//     ~14 ms of CPU in its sandbox to get ready against ~34 ms for a
//     python runner, and it holds ~1.6 MiB of its cgroup against ~5 MiB
//     (the process: ~2 MB resident, 0.6 MB anonymous; a python stub ~9 MB,
//     3.5 MB anonymous);
//   - its Go runtime started with the runner, so at take time it costs a
//     read, a chdir and an execve — the same execve a cold run ends with.
//     From the run's message to bash's first command: 1.77 ms p50, against
//     1.49 ms for a bash that waited on a pipe and 1.86 ms for a python
//     (execve ends the Go runtime's other threads);
//   - it takes descriptors over the socket (fresh stdout and stderr), which
//     a bash stub could not, reads the message in large reads, where bash's
//     read builtin reads a socket a byte at a time, and hands bash exactly
//     the run's environment, names bash could not export included.
// The program replaces the stub, so nothing is left to report its exit
// status: the run's status is the sandbox's (see warm.Early.AttachExec).

// ExecRunners reports whether exec runners (RunnerCommand) work here.
const ExecRunners = true

// RunRunner is the body of the sandbox-runner sub-command: `sandbox-runner
// -- PROGRAM ARGS…`. It returns only on failure.
func RunRunner(args []string) int {
	// The program is executed from this thread (see RunLandlock).
	runtime.LockOSThread()
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintln(os.Stderr, "usage: codexec sandbox-runner -- PROGRAM ARGS…")
		return 126
	}
	return serveRun(args[1:], false)
}

// serveRun is an exec runner's stub for argv (see RunnerCommand): ready,
// one run, exec. dropPWD drops PWD from the run's environment, as
// sandbox-landlock does for a cold run. It returns only on failure: 125
// if the run could not be taken, 127 if the program could not be
// executed.
func serveRun(argv []string, dropPWD bool) int {
	cwd, env, code, args, err := takeRun()
	if err == nil {
		err = unix.Chdir(cwd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "codexec sandbox-runner:", err)
		return 125
	}
	if dropPWD {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PWD=") })
	}
	// The control socket, and anything else above stdio, is not the
	// program's.
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	argv = append(append(argv[:len(argv):len(argv)], code), args...)
	err = syscall.Exec(argv[0], argv, env)
	fmt.Fprintf(os.Stderr, "exec %s: %v\n", argv[0], err)
	return 127
}

// takeRun says "R" on fd 3 and reads the run: first, optionally, "F" with
// the run's stdout and stderr (SCM_RIGHTS), which replace descriptors 1
// and 2; then the run message (EncodeRun).
func takeRun() (cwd string, env []string, code string, args []string, err error) {
	if err := writeFull(3, []byte("R")); err != nil {
		return "", nil, "", nil, fmt.Errorf("ready: %w", err)
	}
	first := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(2*4))
	var n, oobn int
	for {
		n, oobn, _, _, err = unix.Recvmsg(3, first, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil || n != 1 {
		return "", nil, "", nil, fmt.Errorf("control socket: %v (n=%d)", err, n)
	}
	var buf []byte
	if first[0] == 'F' {
		if err := takeStdio(oob[:oobn]); err != nil {
			return "", nil, "", nil, err
		}
	} else {
		buf = first
	}
	payload, err := readMessage(3, buf)
	if err != nil {
		return "", nil, "", nil, err
	}
	return DecodeRun(payload)
}

// takeStdio puts the two descriptors of an "F" message on 1 and 2.
func takeStdio(oob []byte) error {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		return errors.New("stdio message without descriptors")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 2 {
		return errors.New("stdio message: bad descriptors")
	}
	for i, fd := range fds {
		if err := unix.Dup3(fd, 1+i, 0); err != nil {
			return err
		}
		_ = unix.Close(fd)
	}
	return nil
}

// readMessage reads from fd, after what buf holds, one message of the form
// "<length>\n<payload>" and returns the payload.
func readMessage(fd int, buf []byte) ([]byte, error) {
	chunk := make([]byte, 64<<10)
	need := -1
	for {
		if need < 0 {
			if i := bytes.IndexByte(buf, '\n'); i >= 0 {
				var err error
				if need, err = strconv.Atoi(string(buf[:i])); err != nil || need < 0 {
					return nil, fmt.Errorf("run message: bad length %q", buf[:i])
				}
				buf = buf[i+1:]
			}
		}
		if need >= 0 && len(buf) >= need {
			return buf[:need], nil
		}
		n, err := unix.Read(fd, chunk)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, fmt.Errorf("run message: %w", err)
		case n == 0:
			return nil, errors.New("run message: control socket closed")
		}
		buf = append(buf, chunk[:n]...)
	}
}

// writeFull writes b to fd with plain system calls.
func writeFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
