package sandbox

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// File size caps in subprocess mode (RLIMIT_FSIZE): the size of any single
// file a program — and everything it starts — can write. A write past it
// fails with EFBIG, or SIGXFSZ kills a program that does not ignore it
// (Python ignores it). It bounds neither the number of files nor their
// total. Go cannot set a child's rlimits between fork and exec, so a cold
// run execs through the helper's sandbox-fsize step, which sets the limit
// and execs the program; a warm runner gets it right after its start, as it
// runs nothing of the user's before it is handed a run.

// FsizeCommand is the hidden sub-command that runs a program with a file
// size cap: `codexec-sandbox sandbox-fsize BYTES -- PROGRAM ARGS…`. Every
// binary that links this package understands it (init below): the helper,
// codexec itself, which stands in when the helper is missing, and the test
// binaries of the packages that run subprocess backends.
const FsizeCommand = "sandbox-fsize"

func init() {
	if len(os.Args) > 1 && os.Args[1] == FsizeCommand {
		os.Exit(RunFsize(os.Args[2:]))
	}
}

// RunFsize is the body of the sandbox-fsize sub-command. It returns only on
// failure (exit status 126).
func RunFsize(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "usage: codexec sandbox-fsize BYTES -- PROGRAM ARGS…")
		return 126
	}
	n, err := strconv.ParseUint(args[0], 10, 64)
	if err == nil {
		err = unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: n, Max: n})
	}
	prog := args[2]
	if err == nil {
		prog, err = exec.LookPath(prog)
	}
	if err == nil {
		err = syscall.Exec(prog, args[2:], os.Environ())
	}
	fmt.Fprintln(os.Stderr, "codexec sandbox-fsize:", err)
	return 126
}

// fsizeArgv returns argv run with a file size cap of bytes (none if 0)
// through the helper.
func fsizeArgv(argv []string, bytes int64) ([]string, error) {
	if bytes <= 0 {
		return argv, nil
	}
	helper, err := helperExe()
	if err != nil {
		return nil, err
	}
	return append([]string{helper, FsizeCommand, strconv.FormatInt(bytes, 10), "--"}, argv...), nil
}

// limitFileSize caps the file size of the running process pid (warm
// runners, see above).
func limitFileSize(pid int, bytes int64) {
	if bytes <= 0 {
		return
	}
	lim := unix.Rlimit{Cur: uint64(bytes), Max: uint64(bytes)}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &lim, nil); err != nil {
		slog.Warn("subprocess: could not set the file size limit", "pid", pid, "err", err)
	}
}
