package cgroup

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/instance"
)

// The delegation tests make, as root, a parent in each v1 hierarchy owned
// by a test account, as an operator delegates one, and run this test
// binary again as that account (delegateEnv names the step) to use it the
// way a codexec run as that user does.

const (
	delegateEnv     = "CODEXEC_CGROUP_TEST_DELEGATED"
	delegateArgEnv  = delegateEnv + "_ARG"
	testAccountName = "codexec-cgtest"
)

// delegatedReport is what the "use" step saw, as the test account.
type delegatedReport struct {
	UID          int
	Usable       bool
	Info         string
	PinFrozen    bool
	MaxPids      int   // most processes seen in the group
	Peak         int64 // pids.peak: most processes the group held (-1: no such file)
	ForkRefusals int64 // pids.events "max": forks the limit refused
	EmptyAfter   bool  // the group was empty after Kill
	Kept, Reused bool  // the pool kept the group and gave it out again
	DirsLeft     int   // server directories left after Release
	DeniedUsable bool  // a parent the account cannot write
	DeniedReason string
	Error        string
	UserNS       string // the step's user namespace (/proc/self/ns/user)
}

// TestDelegatedV1 runs codexec's group handling as a normal user in a
// parent delegated to it on cgroup v1: the group gets its limits (a pids
// limit holds: forks past it fail), the freezer pin and the pool work, a
// kill empties it, and everything goes at Destroy and Release. A parent
// the user cannot write is reported unusable, with the reason.
func TestDelegatedV1(t *testing.T) {
	parent, uid, exe := delegatedParent(t)
	denied := parent + "-denied"
	for _, c := range v1Controllers {
		dir := filepath.Join(Root, c, denied)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { removeTree(dir) })
	}
	for _, userns := range []bool{false, true} {
		t.Run(fmt.Sprintf("userns=%v", userns), func(t *testing.T) {
			cmd := asAccount(exe, uid, "use", parent, denied)
			if userns {
				inUserNamespace(cmd, uid)
			}
			out, err := cmd.Output()
			var r delegatedReport
			if jerr := json.Unmarshal(out, &r); jerr != nil {
				t.Fatalf("the step as %s said %q (%v, %v)", testAccountName, out, err, jerr)
			}
			if own, _ := os.Readlink("/proc/self/ns/user"); (r.UserNS != own) != userns {
				t.Errorf("the step ran in user namespace %s, this test in %s; want another one: %v", r.UserNS, own, userns)
			}
			checkUse(t, r, uid, parent, denied)
		})
	}
}

// checkUse checks what the "use" step saw.
func checkUse(t *testing.T, r delegatedReport, uid int, parent, denied string) {
	t.Helper()
	if r.Error != "" {
		t.Fatalf("as %s (uid %d): %s (%s)", testAccountName, r.UID, r.Error, r.Info)
	}
	t.Logf("as %s: %+v", testAccountName, r)
	peak := int64(4) // the limit, reached before the refused forks
	if r.Peak == -1 {
		peak = -1 // a kernel without pids.peak
	}
	want := delegatedReport{UID: uid, Usable: true, Info: r.Info, PinFrozen: true, MaxPids: r.MaxPids, Peak: peak, ForkRefusals: r.ForkRefusals,
		EmptyAfter: true, Kept: true, Reused: true, DeniedReason: r.DeniedReason, UserNS: r.UserNS}
	if d := cmp.Diff(want, r); d != "" {
		t.Errorf("as %s (-want +got):\n%s", testAccountName, d)
	}
	if r.MaxPids < 1 || r.MaxPids > 4 {
		t.Errorf("the group held up to %d processes, want 1 to 4 (its limit)", r.MaxPids)
	}
	if r.ForkRefusals < 1 {
		t.Errorf("pids.events counts %d refused forks, want some (8 forks under a limit of 4)", r.ForkRefusals)
	}
	if !strings.Contains(r.DeniedReason, "permission denied") || !strings.Contains(r.DeniedReason, denied) {
		t.Errorf("reason for a parent uid %d cannot write = %q, want permission denied naming it", uid, r.DeniedReason)
	}
	noGroupsLeft(t, parent)
}

// TestDelegatedV1Sweep: a server run as the user that died with a
// group holding a process leaves nothing once the next server of that
// user sweeps the parent: the process is killed and the groups removed.
func TestDelegatedV1Sweep(t *testing.T) {
	parent, uid, exe := delegatedParent(t)
	hold := asAccount(exe, uid, "hold", parent, "")
	in, _ := hold.StdinPipe()
	out, _ := hold.StdoutPipe()
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var sleeper int
	line, _ := bufio.NewReader(out).ReadString('\n')
	if _, err := fmt.Sscanf(line, "ready %d", &sleeper); err != nil {
		_ = hold.Process.Kill()
		_ = hold.Wait()
		t.Fatalf("hold step said %q", line)
	}
	_ = hold.Process.Kill()
	_ = hold.Wait()
	b, err := asAccount(exe, uid, "sweep", parent, "").Output()
	var swept Swept
	if jerr := json.Unmarshal(b, &swept); jerr != nil {
		t.Fatalf("sweep step said %q (%v, %v)", b, err, jerr)
	}
	if swept.Removed < len(v1Controllers) || swept.Spared != 0 {
		t.Errorf("sweep as the user = %+v, want the dead server's %d groups removed", swept, len(v1Controllers))
	}
	if err := syscall.Kill(sleeper, 0); err != syscall.ESRCH && !zombie(sleeper) {
		t.Errorf("the dead server's process %d still runs (%v)", sleeper, err)
	}
	noGroupsLeft(t, parent)
}

// noGroupsLeft checks that no group is left below parent.
func noGroupsLeft(t *testing.T, parent string) {
	t.Helper()
	for _, c := range v1Controllers {
		entries, _ := os.ReadDir(filepath.Join(Root, c, parent))
		for _, e := range entries {
			if e.IsDir() {
				t.Errorf("left below %s: %s", filepath.Join(Root, c, parent), e.Name())
			}
		}
	}
}

func zombie(pid int) bool {
	st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return strings.Contains(string(st), ") Z ")
}

// delegatedParent makes, as root, the parent /codexec-test-<pid>-<n> in
// every v1 hierarchy and hands it to the test account (made when missing),
// as an operator delegates one; it returns the parent, the account's uid
// and a copy of this test binary the account can run.
func delegatedParent(t *testing.T) (parent string, uid int, exe string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("delegating a cgroup to a test account needs root")
	}
	if info := Detect(); info.Version != 1 || !info.Usable() {
		t.Skipf("needs the cgroup v1 hierarchies %v (%s)", v1Controllers, info)
	}
	uid, gid := testAccount(t)
	parent = "/codexec-test-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(treeSeq.Add(1), 10)
	for _, c := range v1Controllers {
		dir := filepath.Join(Root, c, parent)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { removeTree(dir) })
		if err := chownTree(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return parent, uid, readableCopy(t)
}

// testAccount returns the test account's ids, making it when missing.
func testAccount(t *testing.T) (uid, gid int) {
	t.Helper()
	u, err := user.Lookup(testAccountName)
	if err != nil {
		if out, err := exec.Command("useradd", "-m", "-s", "/bin/bash", testAccountName).CombinedOutput(); err != nil {
			t.Skipf("cannot make the test account %s: %v %s", testAccountName, err, out)
		}
		if u, err = user.Lookup(testAccountName); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// readableCopy copies this test binary to a directory every account can
// read and run it from.
func readableCopy(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "codexec-cgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "cgroup.test")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

// asAccount runs step of this test binary as uid (its group too), with
// arguments arg1 and arg2 (see delegatedStep).
func asAccount(exe string, uid int, step, arg1, arg2 string) *exec.Cmd {
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Dir = filepath.Dir(exe)
	cmd.Env = []string{"PATH=/usr/bin:/bin", delegateEnv + "=" + step, delegateArgEnv + "1=" + arg1, delegateArgEnv + "2=" + arg2}
	cmd.Stderr = os.Stderr
	u, _ := user.LookupId(strconv.Itoa(uid))
	gid, _ := strconv.Atoi(u.Gid)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	return cmd
}

// inUserNamespace makes cmd start in a user namespace of its own that maps
// uid (and its group) to itself, as codexec run as a user does.
func inUserNamespace(cmd *exec.Cmd, uid int) {
	c := cmd.SysProcAttr.Credential
	c.NoSetGroups = true // a user namespace's process may not set groups
	cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWUSER
	cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: int(c.Gid), HostID: int(c.Gid), Size: 1}}
}

// delegatedStep runs a step as the test account; it prints what it saw.
// Its first argument is the parent; the second, of "use", a parent it
// cannot write, and of "move" the parent, the first being where the v2
// hierarchy is mounted.
func delegatedStep(step string) {
	parent, arg2 := os.Getenv(delegateArgEnv+"1"), os.Getenv(delegateArgEnv+"2")
	var v any
	switch step {
	case "use":
		v = useDelegated(parent, arg2)
	case "hold":
		holdDelegated(parent)
		return
	case "sweep":
		v = Sweep(DetectIn(parent))
	case "move":
		moveDelegated(parent, arg2)
		return
	}
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

// useDelegated makes a pooled group with a pids limit below parent, runs
// a shell that forks past it, kills the group, gives it back to the pool,
// takes it again, and removes everything.
func useDelegated(parent, denied string) (r delegatedReport) {
	r.UID = os.Getuid()
	r.UserNS, _ = os.Readlink("/proc/self/ns/user")
	info := DetectIn(parent)
	r.Usable, r.Info = info.Usable(), info.String()
	fail := func(err error) delegatedReport { r.Error = err.Error(); return r }
	pool := NewPool(info, 1)
	g, err := pool.New("delegated-1", Limits{MemoryBytes: 64 << 20, CPUs: 0.5, Pids: 4})
	if err != nil {
		return fail(err)
	}
	st, _ := os.ReadFile(filepath.Join(pin.dir, "freezer.state"))
	r.PinFrozen = pin.dir != "" && strings.HasPrefix(pin.dir, filepath.Join(Root, "freezer", parent)) && strings.TrimSpace(string(st)) == "FROZEN"
	if err := forkPastLimit(g, &r); err != nil {
		return fail(err)
	}
	dirs := append([]string(nil), g.dirs...)
	if err := g.Destroy(); err != nil {
		return fail(err)
	}
	r.Kept = pool.Kept() == 1
	g2, err := pool.New("delegated-2", Limits{MemoryBytes: 64 << 20, CPUs: 0.5, Pids: 4})
	if err != nil {
		return fail(err)
	}
	r.Reused = cmp.Equal(dirs, g2.dirs)
	if err := g2.Destroy(); err != nil {
		return fail(err)
	}
	pool.Close()
	Release()
	dirsLeft, _ := ServerDirs(info, instance.Self())
	r.DirsLeft = len(dirsLeft)
	d := DetectIn(denied)
	r.DeniedUsable, r.DeniedReason = d.Usable(), d.Reason
	return r
}

// forkPastLimit places a shell that starts 8 sleeps in g (pids limit 4),
// records what the group held and refused, and kills it.
func forkPastLimit(g *Group, r *delegatedReport) error {
	sh := exec.Command("/bin/sh", "-c", "read x; for i in 1 2 3 4 5 6 7 8; do sleep 30 & done; wait")
	in, _ := sh.StdinPipe()
	if err := sh.Start(); err != nil {
		return err
	}
	defer func() { _ = sh.Process.Kill(); _ = sh.Wait() }()
	for _, f := range g.ProcsFiles() {
		if err := os.WriteFile(f, []byte(strconv.Itoa(sh.Process.Pid)), 0); err != nil {
			return err
		}
	}
	_, _ = in.Write([]byte("go\n"))
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r.MaxPids = max(r.MaxPids, len(g.Pids()))
		if r.ForkRefusals = g.readKey(pidsIdx, "pids.events", "max"); r.ForkRefusals > 0 {
			break
		}
	}
	r.Peak = -1
	if _, err := g.get(pidsIdx, "pids.peak"); err == nil {
		r.Peak = g.readInt(pidsIdx, "pids.peak")
	}
	if err := g.Kill(); err != nil {
		return err
	}
	_ = sh.Wait()
	g.Drain()
	r.EmptyAfter = len(g.Pids()) == 0
	return nil
}

// holdDelegated makes a group below parent holding a setsid sleep, says
// "ready <pid>" and waits to be killed.
func holdDelegated(parent string) {
	g, err := New(DetectIn(parent), "held-1", Limits{Pids: 8})
	if err != nil {
		fmt.Println("error", err)
		return
	}
	sleeper := exec.Command("sleep", "300")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := sleeper.Start(); err != nil {
		fmt.Println("error", err)
		return
	}
	for _, f := range g.ProcsFiles() {
		_ = os.WriteFile(f, []byte(strconv.Itoa(sleeper.Process.Pid)), 0)
	}
	fmt.Printf("ready %d\n", sleeper.Process.Pid)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// moveReport is what the "move" step saw: canMoveInto's verdict and the
// kernel's on moving a process into a group below the parent.
type moveReport struct {
	Check  string // canMoveInto's error, "" when it allows the move
	Kernel string // the write to cgroup.procs' error, "" when it worked
}

// TestDelegatedV2Move: on a cgroup v2 hierarchy (the unified one on a
// hybrid host: controllers are not needed for this), the test account may
// move processes into a group of a directory delegated to it only once it
// runs inside that directory, as canMoveInto predicts.
func TestDelegatedV2Move(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("delegating a cgroup to a test account needs root")
	}
	mnt := ""
	for _, m := range []string{Root, filepath.Join(Root, "unified")} {
		if _, err := os.Stat(filepath.Join(m, "cgroup.procs")); err == nil {
			mnt = m
			break
		}
	}
	if mnt == "" {
		t.Skip("no cgroup v2 hierarchy mounted")
	}
	uid, gid := testAccount(t)
	top := "/codexec-test-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(treeSeq.Add(1), 10)
	for _, d := range []string{"server", "runs"} {
		if err := os.MkdirAll(filepath.Join(mnt, top, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { removeTree(filepath.Join(mnt, top)) })
	if err := chownTree(filepath.Join(mnt, top), uid, gid); err != nil {
		t.Fatal(err)
	}
	cmd := asAccount(readableCopy(t), uid, "move", mnt, top+"/runs")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	var outside, inside moveReport
	readReport(t, lines, &outside)
	if err := write(filepath.Join(mnt, top, "server"), "cgroup.procs", strconv.Itoa(cmd.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	_, _ = in.Write([]byte("moved\n"))
	readReport(t, lines, &inside)
	if !strings.Contains(outside.Check, "meet at /,") || outside.Kernel == "" {
		t.Errorf("outside the delegated directory: check %q, kernel %q; want both to refuse", outside.Check, outside.Kernel)
	}
	t.Logf("outside: %+v; inside: %+v", outside, inside)
	if inside != (moveReport{}) {
		t.Errorf("inside the delegated directory: %+v, want both to allow the move", inside)
	}
}

func readReport(t *testing.T, lines *bufio.Scanner, r *moveReport) {
	t.Helper()
	if !lines.Scan() {
		t.Fatalf("the move step said nothing (%v)", lines.Err())
	}
	if err := json.Unmarshal(lines.Bytes(), r); err != nil {
		t.Fatalf("the move step said %q: %v", lines.Bytes(), err)
	}
}

// moveDelegated reports a move into a new group below parent in the v2
// hierarchy mounted at mnt, then again once told it was moved itself.
func moveDelegated(mnt, parent string) {
	for i := 0; i < 2; i++ {
		b, _ := json.Marshal(tryMove(mnt, parent, i))
		fmt.Println(string(b))
		if i == 0 {
			_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		}
	}
}

func tryMove(mnt, parent string, n int) (r moveReport) {
	self, _ := os.ReadFile("/proc/self/cgroup")
	if err := (host{root: mnt, self: string(self), uid: os.Geteuid()}).canMoveInto(parent); err != nil {
		r.Check = err.Error()
	}
	g := filepath.Join(mnt, parent, "g-"+strconv.Itoa(n))
	if err := os.Mkdir(g, 0o755); err != nil {
		r.Kernel = err.Error()
		return r
	}
	defer func() { _ = rmdirRetry(g, time.Now().Add(5*time.Second)) }()
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		r.Kernel = err.Error()
		return r
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	if err := write(g, "cgroup.procs", strconv.Itoa(sleeper.Process.Pid)); err != nil {
		r.Kernel = err.Error()
	}
	return r
}
