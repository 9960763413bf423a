//go:build !linux

package helper

import (
	"errors"
	"fmt"
	"os"
)

// errUnsupported is why the namespace sandbox's steps fail off Linux: they
// need its namespaces, cgroups, Landlock and SCM_RIGHTS launch protocol.
var errUnsupported = errors.New("the namespace sandbox needs Linux")

// RunInit reports that sandbox-init needs Linux (exit status 125).
func RunInit(args []string) int {
	fmt.Fprintln(os.Stderr, "codexec sandbox-init:", errUnsupported)
	return 125
}

// RunLandlock reports that sandbox-landlock needs Linux (exit status 126).
func RunLandlock(args []string) int {
	fmt.Fprintln(os.Stderr, "codexec sandbox-landlock:", errUnsupported)
	return 126
}

// LandlockABI is 0: no Landlock off Linux.
func LandlockABI() int { return 0 }

// SendLaunch fails: there are no pooled launchers off Linux.
func SendLaunch(ctl *os.File, argv, env []string, plan string, net *Sockets, stdio [3]*os.File, extra []*os.File) error {
	return errUnsupported
}

// ExecRunners is false: exec runners (RunnerCommand) need Linux.
const ExecRunners = false

// RunRunner reports that exec runners need Linux (exit status 125).
func RunRunner(args []string) int {
	fmt.Fprintln(os.Stderr, "codexec sandbox-runner:", errUnsupported)
	return 125
}
