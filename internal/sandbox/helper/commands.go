package helper

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// The hidden sub-commands (verbs) of the helper. cmd/codexec and
// cmd/codexec-sandbox dispatch each of them in main, before anything else.
const (
	// InitCommand runs between the server's fork and bwrap (runc style):
	// `sandbox-init UID GID PROCS… -- BWRAP ARGS…` places itself in the
	// run's cgroups while still root, makes a captured network's sockets
	// if asked (CaptureOption), drops to the sandbox uid for good,
	// sets no_new_privs and executes bwrap (RunInit); `sandbox-init
	// --pooled UID GID PROCS…` joins the cgroups, then waits (still root,
	// for the template plan) for the command on fd 3 (SendLaunch).
	InitCommand = "sandbox-init"
	// LandlockCommand runs *inside* the namespace sandbox, right before the
	// program: `sandbox-landlock [--keep-ctl|--runner] RW_DIR… -- PROGRAM
	// ARGS…` adds Landlock as a second layer where the kernel has it: file
	// access limited to reading and executing what the sandbox shows,
	// writing only in the given directories and /dev; signals and abstract
	// unix sockets scoped to the sandbox's own processes (ABI ≥ 6). It also
	// drops PWD, which bwrap exports. Missing Landlock support is not an
	// error (the namespace sandbox stands alone). With --runner it then
	// serves as an exec runner's stub for the program (RunnerCommand)
	// instead of executing it at once.
	LandlockCommand = "sandbox-landlock"
	// FsizeCommand runs a program with a file size cap in subprocess mode:
	// `sandbox-fsize BYTES -- PROGRAM ARGS…` (RunFsize). Go cannot set a
	// child's rlimits between fork and exec, so the cap is set here, then
	// the program is executed.
	FsizeCommand = "sandbox-fsize"
	// RunnerCommand is the stub of an exec runner (a warm bash):
	// `sandbox-runner -- PROGRAM ARGS…` says ready on fd 3, takes its one
	// run there (optional fresh stdout and stderr, then EncodeRun), and
	// executes PROGRAM ARGS… CODE RUN_ARGS… in the run's cwd and
	// environment (RunRunner).
	RunnerCommand = "sandbox-runner"
	// HoldCommand keeps a namespace alive for its parent: `sandbox-hold`
	// waits until its standard input ends, then exits 0. The server starts
	// it in a fresh user namespace whose id maps it writes, opens the
	// namespace and closes the pipe (package idmap).
	HoldCommand = "sandbox-hold"
	// WatchdogCommand is the one child per server that kills the server's
	// runs when the server dies: `sandbox-watchdog MARKER_PREFIX` reads what
	// to kill on its stdin until that ends (RunWatchdog, watchdog.go).
	WatchdogCommand = "sandbox-watchdog"
)

// Dispatch runs the sub-command args names (args[0], as in os.Args[1:])
// and returns its exit status; ok is false when args names none, and then
// nothing ran. A binary that can act as the helper calls it first thing in
// main: no package dispatches from an init function.
func Dispatch(args []string) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case InitCommand:
		return RunInit(args[1:]), true
	case LandlockCommand:
		return RunLandlock(args[1:]), true
	case FsizeCommand:
		return RunFsize(args[1:]), true
	case RunnerCommand:
		return RunRunner(args[1:]), true
	case HoldCommand:
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0, true
	case WatchdogCommand:
		return RunWatchdog(args[1:]), true
	}
	return 0, false
}

// RootOption is sandbox-init's first option in template mode: `--root
// "NS K:POINT…"` makes it join the mount namespace NS (a descriptor), take
// a private copy of it, move each detached mount tree K (open_tree clones)
// onto POINT there, close them all, and only then drop its privileges and
// execute bwrap. NS and K index the extra descriptors (fd 3 + index).
const RootOption = "--root"

// RlimitsOption is the first option of LandlockCommand where no cgroup
// limits the run (a server without root and without a delegated cgroup):
// `--rlimits DATA,NPROC,FSIZE` sets those resource limits (0: leave it)
// before anything else. Set inside the sandbox, the process count is
// counted in the sandbox's own user namespace: the sandbox's processes
// only, not the user's others.
const RlimitsOption = "--rlimits"

// Rlimits encodes the values of RlimitsOption.
func Rlimits(data, nproc, fsize int64) string {
	return strconv.FormatInt(data, 10) + "," + strconv.FormatInt(nproc, 10) + "," + strconv.FormatInt(fsize, 10)
}

// KeepCtl is the option of LandlockCommand that keeps descriptor 3 (a warm
// runner's control socket) open for the program.
const KeepCtl = "--keep-ctl"

// RunnerOption is the option of LandlockCommand that makes it, once
// restricted, an exec runner's stub (RunnerCommand) for the program.
const RunnerOption = "--runner"

// Name is the small helper binary (cmd/codexec-sandbox) that runs the
// sub-commands when installed next to codexec: it starts in about a
// millisecond, where the full binary pays several of package
// initialisation.
const Name = "codexec-sandbox"

// Exe returns the helper next to the running executable, or the running
// executable itself (which understands the same sub-commands).
func Exe() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	helper := filepath.Join(filepath.Dir(self), Name)
	if st, err := os.Stat(helper); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return helper, nil
	}
	return self, nil
}
