package helper

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

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
