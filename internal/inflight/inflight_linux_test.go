package inflight

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/codexec/codexec/internal/instance"
)

// TestForeignServerJournal: a server of another pid namespace (here a
// process in a new one, holding its journal's lock as a server does) is
// alive while it holds the lock, whatever its pid means here, and gone once
// it has exited.
func TestForeignServerJournal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a new pid namespace needs root")
	}
	dir := t.TempDir()
	holder := exec.Command("sh", "-c", `read p; exec flock -x "$p" sh -c 'echo locked; exec sleep 300'`)
	holder.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	in, _ := holder.StdinPipe()
	out, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Skipf("cannot start a process in a new pid namespace: %v", err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	name := foreignName(t, holder.Process.Pid)
	if !instance.Foreign(name) {
		t.Fatalf("%s is not judged foreign", name)
	}
	path := filepath.Join(dir, name+fileExt)
	if err := os.WriteFile(path, []byte(`{"op":"run","id":"exec_1","run":{"id":"exec_1"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _ = in.Write([]byte(path + "\n"))
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("holder said %q", line)
	}
	if lefts, _ := Leftovers(dir); len(lefts) != 0 || !OthersAlive(dir) {
		t.Fatalf("live foreign server: Leftovers = %d, OthersAlive = %v; want 0, true", len(lefts), OthersAlive(dir))
	}
	_ = holder.Process.Kill()
	_ = holder.Wait() // its namespace's init: every process of it is gone
	if OthersAlive(dir) {
		t.Errorf("OthersAlive after the foreign server exited")
	}
	lefts, err := Leftovers(dir)
	if err != nil || len(lefts) != 1 || lefts[0].Server != name || len(lefts[0].Runs) != 1 {
		t.Fatalf("Leftovers = %+v, %v; want the exited foreign server's run", lefts, err)
	}
	if err := lefts[0].Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("journal still there: %v", err)
	}
}

// foreignName is the server name of pid, the init of a new pid namespace,
// as it names itself there.
func foreignName(t *testing.T, pid int) string {
	t.Helper()
	f := strings.Split(instance.Of(pid), "-")
	var st syscall.Stat_t
	if len(f) != 4 || syscall.Stat("/proc/"+strconv.Itoa(pid)+"/ns/pid", &st) != nil {
		t.Fatalf("cannot name process %d (%v)", pid, f)
	}
	return "1-" + f[1] + "-" + f[2] + "-" + strconv.FormatUint(st.Ino, 10)
}
