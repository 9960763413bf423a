package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// processUID is the real uid of a running process, from /proc.
func processUID(t testing.TB, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatal(err)
			}
			return uid
		}
	}
	t.Fatalf("no Uid line in /proc/%d/status", pid)
	return -1
}

// TestRootlessHarness: startRootless runs the server as the test account,
// with a data directory it owns, in subprocess mode when asked (so the
// harness itself is checked on hosts whatever their namespace support).
func TestRootlessHarness(t *testing.T) {
	a := rootlessAccount(t)
	s := startRootless(t, "CODEXEC_SANDBOX_MODE=subprocess")
	if uid := processUID(t, s.Cmd.Process.Pid); uid != a.UID {
		t.Errorf("server runs as uid %d, want the account's %d", uid, a.UID)
	}
	if owner := ownerOf(t, s.DataDir); owner != a.UID {
		t.Errorf("data dir %s owned by %d, want %d", s.DataDir, owner, a.UID)
	}
	r, res := s.exec(map[string]any{"language": "bash", "code": "id -u; echo $HOME"})
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	if want := fmt.Sprintf("%d\n", a.UID); !strings.HasPrefix(r.Stdout, want) {
		t.Errorf("subprocess run as %q, want uid %s", r.Stdout, want)
	}
}
