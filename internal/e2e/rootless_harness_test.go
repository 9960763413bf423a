package e2e

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
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
//
// Paths the test itself set in testEnv are lent to the account (lendEnv):
// they stay where the test expects them; the working directory is made
// reachable.
func (a *testAccount) asAccount(t testing.TB, cmd *exec.Cmd, testEnv []string) string {
	t.Helper()
	data := envValue(testEnv, "CODEXEC_DATA_DIR")
	if data == "" {
		data = a.Dir(t)
	}
	a.lendEnv(t, testEnv)
	cmd.Path = a.Binary()
	cmd.Args[0] = cmd.Path
	cmd.SysProcAttr = a.Credential()
	if cmd.Dir == "" {
		cmd.Dir = filepath.Dir(data)
	}
	a.reach(t, cmd.Dir)
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

// ownDirSettings are the settings naming a directory of the server's own
// (made when missing).
var ownDirSettings = []string{"CODEXEC_DATA_DIR", "CODEXEC_SANDBOX_DIR", "CODEXEC_LOG_DIR", "TMPDIR"}

// lendEnv lends the account what a test's server settings name below the
// temporary directory, as an operator gives a service account its
// directories and configuration files: the directories of ownDirSettings
// (made when missing), and any other setting whose value is a regular
// file there (tokens, credentials, CA files). Callers' directories
// (CODEXEC_WRITABLE_ROOTS, working_dir) keep their owners: who owns them is
// what a test checks; a test wanting one the sandbox user can write makes
// it with sandboxOwner.
func (a *testAccount) lendEnv(t testing.TB, testEnv []string) {
	t.Helper()
	for _, kv := range testEnv {
		key, val, _ := strings.Cut(kv, "=")
		if slices.Contains(ownDirSettings, key) {
			a.lend(t, val)
			continue
		}
		if st, err := os.Stat(val); err == nil && st.Mode().IsRegular() && filepath.IsAbs(val) {
			a.lend(t, val)
		}
	}
}

// sandboxOwner is the host uid and gid that sandboxed code writes files
// as: the unprivileged sandbox user (65534) of a root server, the account
// in the rootless pass (whose programs map to it).
func sandboxOwner(t testing.TB) (uid, gid int) {
	t.Helper()
	if rootlessMode() {
		a := rootlessAccount(t)
		return a.UID, a.GID
	}
	return 65534, 65534
}

// lend gives the account a directory a test made for its server below the
// temporary directory: created if missing, everything in it chowned to the
// account (the server writes there as its owner would), and its ancestors
// made traversable (reach). Paths elsewhere are left alone: the harness
// never changes a system directory.
func (a *testAccount) lend(t testing.TB, dir string) {
	t.Helper()
	if !belowTemp(dir) {
		return
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := chownTree(dir, a.UID, a.GID); err != nil {
		t.Fatal(err)
	}
	a.reach(t, filepath.Dir(dir))
}

// reach lets the account traverse to dir: each ancestor below the
// temporary directory (t.TempDir's 0700 parent among them) gets the
// others' search bit, nothing more (no listing, no writing).
func (a *testAccount) reach(t testing.TB, dir string) {
	t.Helper()
	for d := filepath.Clean(dir); belowTemp(d); d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o001); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// belowTemp says whether p lies strictly below the temporary directory.
func belowTemp(p string) bool {
	rel, err := filepath.Rel(os.TempDir(), filepath.Clean(p))
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
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
// Asked once per test binary.
func rootlessUnavailable(t testing.TB) string {
	t.Helper()
	a := rootlessAccount(t)
	rootlessProbeOnce.Do(func() { rootlessProbe = probeRootless(t, a) })
	return rootlessProbe
}

var (
	rootlessProbeOnce sync.Once
	rootlessProbe     string
)

func probeRootless(t testing.TB, a *testAccount) string {
	t.Helper()
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
		return fmt.Sprintf("%s%v: `codexec doctor` as %s says %s", doctorSays, err, a.Name, doctorLine(out, "namespace:"))
	}
	return ""
}

// doctorSays starts a rootlessUnavailable reason that is codexec's own
// verdict, not a missing host feature.
const doctorSays = "doctor: "

// doctorLine is the first line of doctor's output that starts with prefix
// (the whole output when none does).
func doctorLine(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return out
}

// skipUnlessRootless skips t where this host cannot run a rootless
// namespace sandbox. In the rootless pass (which asked for one) codexec's
// own refusal fails the test instead: there it is a regression, not a
// host limit.
func skipUnlessRootless(t testing.TB) {
	t.Helper()
	why := rootlessUnavailable(t)
	switch {
	case why == "":
	case rootlessMode() && strings.HasPrefix(why, doctorSays):
		t.Fatalf("CODEXEC_TEST_SANDBOX_MODE=rootless, but rootless namespace mode is unavailable: %s", why)
	default:
		t.Skip("rootless namespace mode unavailable: " + why)
	}
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

// rootOnlyLimit is a way root mode enforces or measures a limit that a
// rootless server may lack.
type rootOnlyLimit int

const (
	// byCgroup: OOM kills and their report, cgroup counters (memory peak),
	// CPU quota. A rootless server has a cgroup only when one is delegated
	// to its account (CODEXEC_TEST_ROOTLESS_CGROUP=1 here).
	byCgroup rootOnlyLimit = iota
	// byBoundedDisk: the workspace's loop-mounted disk (ENOSPC at the
	// limit, inode limit). Loop devices and mounts on the host need root;
	// a rootless server bounds file sizes (RLIMIT_FSIZE) and /tmp instead.
	byBoundedDisk
)

// skipWithout skips t in the rootless pass where the server lacks what
// enforces the limit t checks (why): the assertion holds only with it, and
// is not loosened. The rootless tests check the per-process limits a
// rootless server has instead.
func skipWithout(t testing.TB, by rootOnlyLimit, why string) {
	t.Helper()
	if !rootlessMode() {
		return
	}
	switch {
	case by == byCgroup && !rootlessCgroupWanted():
		t.Skipf("rootless without a delegated cgroup: %s needs a cgroup (the pass with CODEXEC_TEST_ROOTLESS_CGROUP=1 runs this)", why)
	case by == byBoundedDisk:
		t.Skipf("rootless: %s needs a bounded workspace disk, which only a root server can mount", why)
	}
}

// removeRootlessState removes, at the end of the test binary, what the
// rootless harness made: the delegated cgroup and the scratch directory
// with the account's copy of the binary. The account stays.
func removeRootlessState() error {
	err := removeDelegatedCgroup()
	if account != nil {
		err = errors.Join(err, os.RemoveAll(account.scratch))
	}
	return err
}
