package proc

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestCloseOnExecInherited: a descriptor opened without close-on-exec (as
// one inherited from a shell is) reaches a child before the call and not
// after it.
func TestCloseOnExecInherited(t *testing.T) {
	fd, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	childSees := func() bool {
		out, err := exec.Command("ls", "/proc/self/fd").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(" "+strings.Join(strings.Fields(string(out)), " ")+" ", " "+strconv.Itoa(fd)+" ")
	}
	if !childSees() {
		t.Fatalf("fd %d without close-on-exec did not reach the child: the test shows nothing", fd)
	}
	CloseOnExecInherited()
	if childSees() {
		t.Errorf("fd %d still reaches a child after CloseOnExecInherited", fd)
	}
}
