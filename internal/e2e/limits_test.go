package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeProbe writes a 9 MiB file at the path PATH and says whether the
// write was stopped, so a test checks a disk limit of 8 MiB it was told
// about.
const writeProbe = `try:
    with open("PATH", "wb") as f:
        for _ in range(9):
            f.write(b"x" * (1 << 20))
            f.flush()
    print("written")
except OSError as e:
    print("stopped", e.errno)
`

// TestResultLimits: execute_code's result says which limits held for the
// run, by the mode's own mechanisms; the execution log and a session's
// results say the same; and the disk limit it claims really stops a
// write. Subprocess mode claims only its file size cap; docker mode, with
// a rootful engine, the engine's memory, process and CPU limits; namespace
// mode, run as root, cgroup limits.
func TestResultLimits(t *testing.T) {
	s := start(t, "CODEXEC_DISK_LIMIT=8m")
	r, res := s.exec(map[string]any{"language": "python", "code": "print('hi')"})
	if res.IsError || r.Status != "success" {
		t.Fatalf("run failed: %+v %s", r, text(res))
	}
	var log struct {
		SandboxMode string            `json:"sandbox_mode"`
		Limits      map[string]string `json:"limits"`
	}
	s.callInto("get_execution_log", map[string]any{"execution_id": r.ExecutionID}, &log)
	if diff := cmp.Diff(r.Limits, log.Limits); diff != "" {
		t.Errorf("log entry's limits differ from the result's (-result +log)\n%s", diff)
	}
	if r.Limits == nil {
		if log.SandboxMode == "namespace" {
			t.Skip("the namespace backend does not report its limits yet (it implements no sandbox.Enforcer)")
		}
		t.Fatalf("%s mode's result has no limits: %s", log.SandboxMode, text(res))
	}
	checkModeLimits(t, log.SandboxMode, r.Limits)
	checkDiskClaim(t, s, r.Limits["disk"])
	sess := s.startSession("python")
	sr, isErr := s.send(sess.SessionID, "print(1)", nil)
	if isErr || sr.Status != "success" {
		t.Fatalf("send_to_session failed: %+v", sr)
	}
	if diff := cmp.Diff(r.Limits, sr.Limits); diff != "" {
		t.Errorf("a session's result has other limits than a one-shot run's (-run +session)\n%s", diff)
	}
}

// checkModeLimits checks what mode claims for memory, pids and cpu.
func checkModeLimits(t *testing.T, mode string, got map[string]string) {
	t.Helper()
	for _, k := range []string{"memory", "pids", "cpu", "disk"} {
		if got[k] == "" {
			t.Errorf("limits lack %s: %v", k, got)
		}
	}
	want := map[string]string{"subprocess": "none", "docker": "container", "namespace": "cgroup"}[mode]
	if want == "" {
		t.Fatalf("unknown sandbox mode %q", mode)
	}
	if mode != "subprocess" && os.Geteuid() != 0 {
		t.Logf("%s mode not run as root: its limits %v are not checked against a root server's", mode, got)
		return
	}
	for _, k := range []string{"memory", "pids", "cpu"} {
		if got[k] != want {
			t.Errorf("%s mode: %s held by %q, want %q (all limits: %v)", mode, k, got[k], want, got)
		}
	}
}

// checkDiskClaim checks that the disk limit claimed (8 MiB) stops a 9 MiB
// write where it says it does.
func checkDiskClaim(t *testing.T, s *server, disk string) {
	t.Helper()
	path := map[string]string{"rlimit file size 8 MiB": "big", "disk image 8 MiB": "big", "tmpfs 8 MiB": "/tmp/big"}[disk]
	if path == "" {
		t.Fatalf("disk limit %q: want the 8 MiB limit the server was given, as a file size rlimit, disk image or tmpfs", disk)
	}
	r, res := s.exec(map[string]any{"language": "python", "code": strings.ReplaceAll(writeProbe, "PATH", path)})
	if !strings.HasPrefix(r.Stdout, "stopped ") {
		t.Errorf("disk limit %q claimed, but a 9 MiB write to %s was not stopped: %+v %s", disk, path, r, text(res))
	}
}
