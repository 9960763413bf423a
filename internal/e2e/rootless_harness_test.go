package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// rootlessAccountName is the normal account the rootless servers run as.
// It is created (useradd -m) when missing and never deleted: the test may
// not own it, and leaving it costs nothing.
const rootlessAccountName = "codexec-rootless"

// rootlessMode says whether this test process runs every server it starts
// as the test account (CODEXEC_TEST_SANDBOX_MODE=rootless): a normal user's
// codexec, namespace mode without root.
func rootlessMode() bool {
	return os.Getenv("CODEXEC_TEST_SANDBOX_MODE") == "rootless"
}

// rootlessCgroupWanted says whether the rootless servers get a cgroup
// delegated to the account (CODEXEC_TEST_ROOTLESS_CGROUP=1), as an operator
// (or systemd's user service) would give them.
func rootlessCgroupWanted() bool {
	return os.Getenv("CODEXEC_TEST_ROOTLESS_CGROUP") == "1"
}

// testAccount is the unprivileged account of the rootless tests.
type testAccount struct {
	Name     string
	UID, GID int
	Home     string
	// binDir holds copies of codexec and codexec-sandbox the account can
	// execute (the build directory is root's 0700 temporary directory).
	binDir string
	// scratch is a 0755 directory where each test's account-owned
	// directories are made (t.TempDir is below a root-only 0700 one).
	scratch string
}

var (
	accountOnce sync.Once
	account     *testAccount
	accountErr  error // a reason to skip, not a failure
)

// rootlessAccount returns the test account, creating it and its
// executable copy of the binary on first use. It skips the test where the
// account cannot be made or switched to (the test must run as root).
func rootlessAccount(t testing.TB) *testAccount {
	t.Helper()
	bin := binary(t)
	accountOnce.Do(func() { account, accountErr = setUpAccount(bin) })
	if accountErr != nil {
		t.Skipf("rootless tests need a test account: %v", accountErr)
	}
	return account
}

func setUpAccount(bin string) (_ *testAccount, retErr error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("this test runs as uid %d; only root can create %s and start processes as it", os.Geteuid(), rootlessAccountName)
	}
	u, err := user.Lookup(rootlessAccountName)
	if err != nil {
		out, err := exec.Command("useradd", "-m", "-s", "/bin/bash", rootlessAccountName).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("useradd %s: %v: %s (install the passwd package)", rootlessAccountName, err, out)
		}
		if u, err = user.Lookup(rootlessAccountName); err != nil {
			return nil, err
		}
	}
	a := &testAccount{Name: u.Username, Home: u.HomeDir}
	a.UID, _ = strconv.Atoi(u.Uid)
	a.GID, _ = strconv.Atoi(u.Gid)
	if a.scratch, err = os.MkdirTemp("", "codexec-rootless-e2e-"); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			_ = os.RemoveAll(a.scratch)
		}
	}()
	if err := os.Chmod(a.scratch, 0o755); err != nil {
		return nil, err
	}
	a.binDir = filepath.Join(a.scratch, "bin")
	if err := os.Mkdir(a.binDir, 0o755); err != nil {
		return nil, err
	}
	for _, name := range []string{"codexec", "codexec-sandbox"} {
		if err := copyExecutable(filepath.Join(filepath.Dir(bin), name), filepath.Join(a.binDir, name)); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Binary is the path of the codexec copy the account can execute.
func (a *testAccount) Binary() string { return filepath.Join(a.binDir, "codexec") }

// Dir makes a fresh directory the account owns (mode 0755, below a 0755
// parent, so root tests read it too) and removes it as root at cleanup.
func (a *testAccount) Dir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp(a.scratch, "d-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, a.UID, a.GID); err != nil {
		t.Fatal(err)
	}
	return d
}

// Credential runs a process as the account: its uid and gid, no
// supplementary groups (root's would otherwise be kept).
func (a *testAccount) Credential() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(a.UID), Gid: uint32(a.GID), Groups: []uint32{}}}
}

// Command is exec.Command(name, args...) run as the account in its home,
// with a small environment of its own.
func (a *testAccount) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = a.Credential()
	cmd.Dir = a.Home
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + a.Home, "USER=" + a.Name, "LOGNAME=" + a.Name, "LANG=C.UTF-8"}
	return cmd
}

// asAccount turns cmd, a codexec command built for root (its environment
// complete), into the same command run by the account: the account's copy
// of the binary, its credentials and home, a data directory it owns (the
// returned path, replacing CODEXEC_DATA_DIR), namespace mode unless the
// environment pins a mode, and the delegated cgroup when one is wanted.
// The working directory stays cmd.Dir when set (the account must be able
// to enter it), else the data directory's parent.
func (a *testAccount) asAccount(t testing.TB, cmd *exec.Cmd) string {
	t.Helper()
	data := a.Dir(t)
	cmd.Path = a.Binary()
	cmd.Args[0] = cmd.Path
	cmd.SysProcAttr = a.Credential()
	if cmd.Dir == "" {
		cmd.Dir = filepath.Dir(data)
	}
	env := []string{"HOME=" + a.Home, "USER=" + a.Name, "LOGNAME=" + a.Name, "CODEXEC_DATA_DIR=" + data}
	if !hasKey(cmd.Env, "CODEXEC_SANDBOX_MODE") || envValue(cmd.Env, "CODEXEC_SANDBOX_MODE") == "rootless" {
		env = append(env, "CODEXEC_SANDBOX_MODE=namespace")
	}
	if rootlessCgroupWanted() && !hasKey(cmd.Env, "CODEXEC_CGROUP_PARENT") {
		parent, err := delegatedCgroup(a)
		if err != nil {
			t.Fatalf("delegating a cgroup to %s: %v", a.Name, err)
		}
		env = append(env, "CODEXEC_CGROUP_PARENT="+parent)
		closeFD, err := placeInDelegatedCgroup(cmd)
		if err != nil {
			t.Fatalf("placing the server in the delegated cgroup: %v", err)
		}
		t.Cleanup(closeFD)
	}
	cmd.Env = overrideEnv(cmd.Env, env...)
	return data
}

// overrideEnv returns env with each "K=V" of set replacing every earlier
// K (the last value of a key wins in exec, but a replaced one must not
// linger for a reader of the first).
func overrideEnv(env []string, set ...string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !hasKey(set, k) {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// envValue is the last value of key in env ("" when unset).
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// serverMode is CODEXEC_SANDBOX_MODE for a server the harness starts from
// CODEXEC_TEST_SANDBOX_MODE: rootless is namespace mode run by the account.
func serverMode() string {
	if rootlessMode() {
		return "namespace"
	}
	return os.Getenv("CODEXEC_TEST_SANDBOX_MODE")
}

// startRootless starts a stdio server as the test account in namespace
// mode (unless env sets CODEXEC_SANDBOX_MODE), whatever
// CODEXEC_TEST_SANDBOX_MODE says. It skips where the account cannot be
// used.
func startRootless(t testing.TB, env ...string) *server {
	t.Helper()
	return launch(t, true, "", nil, env...)
}

// rootlessUnavailable says why this host cannot run a rootless namespace
// sandbox ("" when it can): it asks `codexec doctor`, run as the account.
func rootlessUnavailable(t testing.TB) string {
	t.Helper()
	a := rootlessAccount(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		return "bubblewrap is not installed (apt-get install bubblewrap)"
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return "user namespaces are disabled (user.max_user_namespaces=0)"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)"
	}
	out, err := a.doctor(t, "CODEXEC_SANDBOX_MODE=namespace")
	if err != nil {
		return fmt.Sprintf("`codexec doctor` as %s says namespace mode cannot run: %v\n%s", a.Name, err, out)
	}
	return ""
}

// doctor runs `codexec doctor` as the account with a data directory it
// owns and returns its combined output.
func (a *testAccount) doctor(t testing.TB, env ...string) (string, error) {
	t.Helper()
	cmd := a.Command(a.Binary(), "doctor")
	cmd.Env = append(append(cmd.Env, "CODEXEC_DATA_DIR="+a.Dir(t)), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
