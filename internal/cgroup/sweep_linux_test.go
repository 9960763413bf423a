package cgroup

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/instance"
)

// The sweep tests run on private parents (codexec-test-<pid>-<n>), never
// on the real one, so they touch no other codexec's groups. A "server" is
// this test binary started again as helperServer: it makes its directory
// and a group "held-1" in every hierarchy through groupDir (locked as a
// server's), places a process there, says "ready <pid> <name>" and waits
// for its stdin to close.

const helperEnv = "CODEXEC_CGROUP_TEST_SERVER"

func TestMain(m *testing.M) {
	if step := os.Getenv(delegateEnv); step != "" {
		delegatedStep(step)
		os.Exit(0)
	}
	if mode := os.Getenv(helperEnv); mode != "" {
		if err := helperServer(mode, filepath.SplitList(os.Getenv(helperEnv+"_BASES"))); err != nil {
			fmt.Fprintln(os.Stderr, "helper server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helperServer is a server of a new pid namespace ("foreign": it mounts
// its own /proc so it names itself as there, and places itself) or of this
// one ("local": it places a setsid sleep, which outlives it).
func helperServer(mode string, bases []string) error {
	pid := os.Getpid()
	if mode == "foreign" {
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return err
		}
		if err := unix.Mount("proc", "/proc", "proc", 0, ""); err != nil {
			return err
		}
	} else {
		sleeper := exec.Command("sleep", "300")
		sleeper.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := sleeper.Start(); err != nil {
			return err
		}
		pid = sleeper.Process.Pid
	}
	for i, b := range bases {
		dir, err := groupDir(b, "held-1", i == 0, nil)
		if err != nil {
			return err
		}
		if err := write(dir, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	fmt.Printf("ready %d %s\n", pid, instance.Self())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// tree is a private set of parents: one per v1 hierarchy, or one on v2.
type tree struct {
	name  string
	bases []string
	v2    bool
}

var treeSeq atomic.Int64

// trees makes the private parents this host allows: v1 when its
// hierarchies carry the controllers, v2 where a cgroup2 file system is
// mounted (the root of /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid
// host). It skips the test when there is neither or it is not root.
func trees(t *testing.T) []tree {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root")
	}
	leaf := "codexec-test-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(treeSeq.Add(1), 10)
	var out []tree
	if info := Detect(); info.Version == 1 && info.Usable() {
		tr := tree{name: "v1"}
		for _, c := range v1Controllers {
			tr.bases = append(tr.bases, filepath.Join(Root, c, ownPath(c), leaf))
		}
		out = append(out, tr)
	}
	for _, mnt := range []string{Root, filepath.Join(Root, "unified")} {
		if _, err := os.Stat(filepath.Join(mnt, "cgroup.controllers")); err == nil {
			out = append(out, tree{name: "v2", bases: []string{filepath.Join(mnt, leaf)}, v2: true})
			break
		}
	}
	if len(out) == 0 {
		t.Skipf("no cgroup file system here (%s)", Detect())
	}
	for _, tr := range out {
		for _, b := range tr.bases {
			if err := os.Mkdir(b, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { removeTree(b) })
		}
	}
	return out
}

// removeTree kills what runs below dir and removes it, deepest first.
func removeTree(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeTree(filepath.Join(dir, e.Name()))
		}
	}
	_ = write(dir, "freezer.state", "THAWED")
	(&Group{dirs: []string{dir}}).Signal(syscall.SIGKILL)
	_ = rmdirRetry(dir, time.Now().Add(5*time.Second))
}

type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	pid   int    // of the placed process, as the helper sees it
	name  string // the helper's server name
}

func startHelper(t *testing.T, tr tree, mode string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperEnv+"_BASES="+strings.Join(tr.bases, string(filepath.ListSeparator)))
	cmd.Stderr = os.Stderr
	if mode == "foreign" {
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS}
	}
	h := &helper{cmd: cmd}
	h.stdin, _ = cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a helper server (%s): %v", mode, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if _, err := fmt.Sscanf(line, "ready %d %s", &h.pid, &h.name); err != nil {
		t.Fatalf("helper server said %q", line)
	}
	return h
}

// exists reports which of the server's directories below bases exist.
func exists(bases []string, name string, sub ...string) []bool {
	var out []bool
	for _, b := range bases {
		_, err := os.Stat(filepath.Join(append([]string{b, name + ownerSuffix}, sub...)...))
		out = append(out, err == nil)
	}
	return out
}

func all(n int, v bool) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// gone waits (up to 5 s) until the process named id (instance.Of) has
// exited, and reports whether it has.
func gone(id string) bool {
	pid, _ := strconv.Atoi(strings.SplitN(id, "-", 2)[0])
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if instance.Of(pid) != id || strings.Contains(string(st), ") Z ") {
			return true
		}
	}
	return false
}

// TestSweepKillsDeadServerOfThisNamespace: a server of this pid namespace
// that is gone has its groups' processes killed (a v1 group it left frozen
// too) and its groups and directories removed.
func TestSweepKillsDeadServerOfThisNamespace(t *testing.T) {
	for _, tr := range trees(t) {
		for _, frozen := range []bool{false, true} {
			if frozen && tr.v2 {
				continue
			}
			t.Run(fmt.Sprintf("%s/frozen=%v", tr.name, frozen), func(t *testing.T) {
				h := startHelper(t, tr, "local")
				sleeper := instance.Of(h.pid)
				if frozen {
					if err := write(filepath.Join(tr.bases[3], h.name+ownerSuffix, "held-1"), "freezer.state", "FROZEN"); err != nil {
						t.Fatal(err)
					}
				}
				_ = h.cmd.Process.Kill()
				_ = h.cmd.Wait()
				if instance.Judge(h.name) != instance.Gone {
					t.Fatalf("the killed helper %s is not judged gone", h.name)
				}
				got := sweepIn(tr.bases, tr.v2, time.Now())
				if !gone(sleeper) {
					t.Errorf("the dead server's process %d still runs", h.pid)
				}
				if want := (Swept{Removed: len(tr.bases)}); got != want {
					t.Errorf("sweepIn = %+v, want %+v", got, want)
				}
				if d := cmp.Diff(all(len(tr.bases), false), exists(tr.bases, h.name)); d != "" {
					t.Errorf("server directories left (-want +got):\n%s", d)
				}
			})
		}
	}
}

// TestSweepSparesServerOfAnotherNamespace: a live server of another pid
// namespace (its pid means nothing here) keeps its groups however old they
// are; once it has exited, its empty groups are removed only when its
// directory is older than grace.
func TestSweepSparesServerOfAnotherNamespace(t *testing.T) {
	for _, tr := range trees(t) {
		t.Run(tr.name, func(t *testing.T) {
			h := startHelper(t, tr, "foreign")
			if !instance.Foreign(h.name) {
				t.Fatalf("helper %s is not of another pid namespace", h.name)
			}
			later := time.Now().Add(2 * grace)
			if got := sweepIn(tr.bases, tr.v2, later); got != (Swept{}) {
				t.Errorf("sweep of a live server's groups = %+v, want nothing", got)
			}
			if d := cmp.Diff(all(len(tr.bases), true), exists(tr.bases, h.name, "held-1")); d != "" {
				t.Errorf("live foreign server's groups (-want +got):\n%s", d)
			}
			if err := syscall.Kill(h.cmd.Process.Pid, 0); err != nil {
				t.Errorf("the foreign server was signalled away: %v", err)
			}
			_ = h.stdin.Close()
			if err := h.cmd.Wait(); err != nil {
				t.Fatalf("helper: %v", err)
			}
			if got := sweepIn(tr.bases, tr.v2, time.Now()); got != (Swept{}) {
				t.Errorf("sweep within grace of a foreign server's exit = %+v, want nothing", got)
			}
			if d := cmp.Diff(all(len(tr.bases), true), exists(tr.bases, h.name, "held-1")); d != "" {
				t.Errorf("groups within grace (-want +got):\n%s", d)
			}
			if got, want := sweepIn(tr.bases, tr.v2, later), (Swept{Removed: len(tr.bases)}); got != want {
				t.Errorf("sweep after grace = %+v, want %+v", got, want)
			}
			if d := cmp.Diff(all(len(tr.bases), false), exists(tr.bases, h.name)); d != "" {
				t.Errorf("server directories after grace (-want +got):\n%s", d)
			}
		})
	}
}

// TestSweepNeverSignalsAnotherNamespace: a group of a server of another pid
// namespace that holds no lock (gone) but still holds a process is left as
// it is, its process untouched, until it is empty.
func TestSweepNeverSignalsAnotherNamespace(t *testing.T) {
	for _, tr := range trees(t) {
		t.Run(tr.name, func(t *testing.T) {
			sleeper := exec.Command("sleep", "300")
			sleeper.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
			if err := sleeper.Start(); err != nil {
				t.Skipf("cannot start a process in a new pid namespace: %v", err)
			}
			t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
			name := foreignName(t, sleeper.Process.Pid)
			for _, b := range tr.bases {
				dir := filepath.Join(b, name+ownerSuffix, "g-1")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := write(dir, "cgroup.procs", strconv.Itoa(sleeper.Process.Pid)); err != nil {
					t.Fatal(err)
				}
			}
			later := time.Now().Add(2 * grace)
			if got, want := sweepIn(tr.bases, tr.v2, later), (Swept{Spared: len(tr.bases)}); got != want {
				t.Errorf("sweep = %+v, want %+v", got, want)
			}
			if err := syscall.Kill(sleeper.Process.Pid, 0); err != nil {
				t.Fatalf("the foreign process was killed: %v", err)
			}
			_ = sleeper.Process.Kill()
			_ = sleeper.Wait()
			if got, want := sweepIn(tr.bases, tr.v2, later), (Swept{Removed: len(tr.bases)}); got != want {
				t.Errorf("sweep once empty = %+v, want %+v", got, want)
			}
		})
	}
}

// foreignName names pid, the first process of a new pid namespace, as it
// would name itself there.
func foreignName(t *testing.T, pid int) string {
	t.Helper()
	f := strings.Split(instance.Of(pid), "-")
	var st syscall.Stat_t
	if len(f) != 4 || syscall.Stat("/proc/"+strconv.Itoa(pid)+"/ns/pid", &st) != nil {
		t.Fatalf("cannot name process %d (%v)", pid, f)
	}
	return "1-" + f[1] + "-" + f[2] + "-" + strconv.FormatUint(st.Ino, 10)
}

// TestSweepEarlierVersionGroups: groups named by earlier versions
// ("<name>-<pid>", no namespace) are never signalled; an empty one whose
// pid runs nothing here is removed once older than grace.
func TestSweepEarlierVersionGroups(t *testing.T) {
	for _, tr := range trees(t) {
		t.Run(tr.name, func(t *testing.T) {
			exited := exec.Command("true")
			if err := exited.Run(); err != nil {
				t.Fatal(err)
			}
			deadPid := strconv.Itoa(exited.Process.Pid)
			sleeper := exec.Command("sleep", "300")
			if err := sleeper.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
			groups := map[string]int{"run-1-" + deadPid: sleeper.Process.Pid, "run-2-" + deadPid: 0, "pin-" + strconv.Itoa(os.Getpid()): 0}
			for name, pid := range groups {
				for _, b := range tr.bases {
					if err := os.Mkdir(filepath.Join(b, name), 0o755); err != nil {
						t.Fatal(err)
					}
					if pid != 0 {
						if err := write(filepath.Join(b, name), "cgroup.procs", strconv.Itoa(pid)); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if got := sweepIn(tr.bases, tr.v2, time.Now()); got != (Swept{}) {
				t.Errorf("sweep within grace = %+v, want nothing", got)
			}
			n := len(tr.bases)
			if got, want := sweepIn(tr.bases, tr.v2, time.Now().Add(2*grace)), (Swept{Removed: n, Spared: n}); got != want {
				t.Errorf("sweep after grace = %+v, want %+v", got, want)
			}
			got := map[string][]bool{}
			for name := range groups {
				for _, b := range tr.bases {
					_, err := os.Stat(filepath.Join(b, name))
					got[name] = append(got[name], err == nil)
				}
			}
			want := map[string][]bool{"run-1-" + deadPid: all(n, true), "run-2-" + deadPid: all(n, false), "pin-" + strconv.Itoa(os.Getpid()): all(n, true)}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("groups kept (-want +got):\n%s", d)
			}
			if err := syscall.Kill(sleeper.Process.Pid, 0); err != nil {
				t.Errorf("a process of an earlier version's group was killed: %v", err)
			}
		})
	}
}

// TestNewLocksServerDirectory: New makes the group in this server's
// directory and holds that directory's lock; Release, once no group is
// left, removes the directories and drops the lock.
func TestNewLocksServerDirectory(t *testing.T) {
	g := newGroup(t, Limits{})
	od := filepath.Dir(g.dirs[0])
	if filepath.Base(od) != ownerName() {
		t.Fatalf("group %s is not in this server's directory %s", g.dirs[0], ownerName())
	}
	if held, ok := lockHeld(od); !held || !ok {
		t.Errorf("lock of %s: held %v (probe worked %v), want held", od, held, ok)
	}
	Release() // a group remains: nothing goes
	if dirs, groups := ServerDirs(Detect(), instance.Self()); len(dirs) == 0 || len(groups) < len(dirs) {
		t.Errorf("after Release with a group: directories %v, groups %v", dirs, groups)
	}
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	Release()
	if dirs, _ := ServerDirs(Detect(), instance.Self()); len(dirs) != 0 || owner.lock != nil {
		t.Errorf("after the last group and Release: directories %v, lock %v", dirs, owner.lock)
	}
	h := newGroup(t, Limits{}) // made again
	defer h.Destroy()
	if held, _ := lockHeld(filepath.Dir(h.dirs[0])); !held {
		t.Errorf("server directory made again without its lock")
	}
}
