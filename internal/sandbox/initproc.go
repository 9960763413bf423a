package sandbox

// The namespace backend starts each run as
//
//	server ──fork/exec──▶ codexec sandbox-init ──exec──▶ bwrap ──▶ program
//	        (root)         joins the run's cgroups,      (uid 65534, new user/pid/net/…
//	                       drops to the sandbox uid,      namespaces, seccomp)
//	                       sets no_new_privs
//
// sandbox-init runs between fork and exec of bwrap, which Go cannot do
// itself: it puts the process into the run's cgroups *before* bwrap can fork
// (so nothing escapes the limits), and drops to an unprivileged host uid
// (a user namespace created by root would otherwise still be host root for
// every file the sandbox can reach).

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// InitCommand is the hidden subcommand name main dispatches to InitMain.
const InitCommand = "sandbox-init"

// InitMain is the body of `codexec sandbox-init --procs F1,F2 --uid N --gid N
// -- argv…`. It only returns on failure, with a non-zero exit code.
func InitMain(args []string) int {
	procs, uid, gid, argv, err := parseInitArgs(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "codexec sandbox-init:", err)
		return 125
	}
	if err := stageBindSources(argv); err != nil {
		fmt.Fprintln(os.Stderr, "codexec sandbox-init:", err)
		return 125
	}
	if err := enterSandbox(procs, uid, gid); err != nil {
		fmt.Fprintln(os.Stderr, "codexec sandbox-init:", err)
		return 125
	}
	err = syscall.Exec(argv[0], argv, os.Environ())
	fmt.Fprintln(os.Stderr, "codexec sandbox-init: exec", argv[0]+":", err)
	return 126
}

func parseInitArgs(args []string) (procs []string, uid, gid int, argv []string, err error) {
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--procs":
			i++
			if args[i] != "" {
				procs = strings.Split(args[i], ",")
			}
		case "--uid", "--gid":
			n, convErr := strconv.Atoi(args[i+1])
			if convErr != nil {
				return nil, 0, 0, nil, fmt.Errorf("bad %s", args[i])
			}
			if args[i] == "--uid" {
				uid = n
			} else {
				gid = n
			}
			i++
		case "--":
			if i+1 >= len(args) {
				return nil, 0, 0, nil, fmt.Errorf("missing command")
			}
			return procs, uid, gid, args[i+1:], nil
		}
	}
	return nil, 0, 0, nil, fmt.Errorf("missing --")
}

// fdPrefix marks a bwrap argument naming a host path that the unprivileged
// sandbox uid may not be able to reach (e.g. below /root, mode 0700).
// sandbox-init, still root, creates a private mount namespace, mounts a
// tmpfs on /tmp there and bind-mounts each such path to /tmp/N, then passes
// /tmp/N to bwrap. The host /tmp is untouched and invisible to the sandbox
// (bwrap builds its own root).
const fdPrefix = "@fd:"

func stageBindSources(argv []string) error {
	if !slices.ContainsFunc(argv, func(a string) bool { return strings.HasPrefix(a, fdPrefix) }) {
		return nil
	}
	runtime.LockOSThread() // mount namespaces are per thread until exec
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	fds, err := openSources(argv)
	if err != nil {
		return err
	}
	if err := unix.Mount("codexec-stage", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("mount staging tmpfs: %w", err)
	}
	for i, fd := range fds {
		staged := "/tmp/" + strconv.Itoa(i)
		if err := bindStage(fd, staged); err != nil {
			return err
		}
		argv[i] = staged
		_ = fd.Close()
	}
	return nil
}

// openSources opens every marked path in the new mount namespace before
// /tmp is covered (a source may itself live in /tmp); keys are argv indexes.
func openSources(argv []string) (map[int]*os.File, error) {
	fds := map[int]*os.File{}
	for i, a := range argv {
		if path, ok := strings.CutPrefix(a, fdPrefix); ok {
			f, err := os.OpenFile(path, unix.O_PATH, 0)
			if err != nil {
				return nil, err
			}
			fds[i] = f
		}
	}
	return fds, nil
}

func bindStage(f *os.File, dst string) error {
	src := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if st.IsDir() {
		err = os.Mkdir(dst, 0o755)
	} else {
		err = os.WriteFile(dst, nil, 0o644)
	}
	if err != nil {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("stage %s: %w", f.Name(), err)
	}
	return nil
}

func enterSandbox(procs []string, uid, gid int) error {
	pid := []byte(strconv.Itoa(os.Getpid()))
	for _, f := range procs {
		if err := os.WriteFile(f, pid, 0o644); err != nil {
			return fmt.Errorf("join cgroup: %w", err)
		}
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("setgid: %w", err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("setuid: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	return unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0)
}
