package proc

import (
	"os/exec"
	"testing"
)

// TestRusageOf: a reaped busy process tree has CPU time and a resident
// set from the kernel's accounting; a process never waited for has none.
func TestRusageOf(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on this host")
	}
	cmd := exec.Command(sh, "-c", `i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sh -c 'j=0; while [ $j -lt 100000 ]; do j=$((j+1)); done'`)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	u, ok := rusageOf(cmd.ProcessState)
	if !ok || u.CPUFrom != FromRusage || u.CPUUser+u.CPUSystem <= 0 || u.RusageMaxRSS <= 0 {
		t.Errorf("rusage of a busy tree: %+v %v, want CPU and a resident set from rusage", u, ok)
	}
	if u, ok := rusageOf(nil); ok || u != (Usage{}) {
		t.Errorf("rusage of no process: %+v %v, want nothing", u, ok)
	}
}
