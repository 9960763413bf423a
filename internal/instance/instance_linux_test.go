package instance

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	running := Of(cmd.Process.Pid)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	f := strings.Split(Self(), "-")
	if len(f) != 4 {
		t.Fatalf("Self() = %q, want pid-start-boot-pidns", Self())
	}
	start, _ := strconv.ParseUint(f[1], 10, 64)
	ns, _ := strconv.ParseUint(f[3], 10, 64)
	otherBoot := "00000000"
	if f[2] == otherBoot {
		otherBoot = "11111111"
	}
	otherNS := strconv.FormatUint(ns+1, 10)
	for _, c := range []struct {
		name    string
		id      string
		want    Verdict
		foreign bool
	}{
		{"self", Self(), Running, false},
		{"exited process", running, Gone, false},
		{"own pid, other start time", f[0] + "-" + strconv.FormatUint(start+1, 10) + "-" + f[2] + "-" + f[3], Gone, false},
		{"other boot", f[0] + "-" + f[1] + "-" + otherBoot + "-" + f[3], Gone, false},
		// Another pid namespace: its pid means nothing here, alive or not.
		{"other pid namespace, pid of a live process here", f[0] + "-" + f[1] + "-" + f[2] + "-" + otherNS, Unknown, true},
		{"other pid namespace, exited pid here", strings.TrimSuffix(running, f[3]) + otherNS, Unknown, true},
		{"other pid namespace and boot", f[0] + "-" + f[1] + "-" + otherBoot + "-" + otherNS, Gone, false},
		// An earlier version's name: any pid namespace of this boot.
		{"earlier version, exited pid", strings.TrimSuffix(running, "-"+f[3]), Unknown, false},
		{"earlier version, other boot", f[0] + "-" + f[1] + "-" + otherBoot, Gone, false},
		{"malformed", "1234", Unknown, false},
		{"unreadable start time", "1234-0-unknown", Unknown, false},
		{"zero namespace", f[0] + "-" + f[1] + "-" + f[2] + "-0", Unknown, false},
		{"empty", "", Unknown, false},
	} {
		if got := Judge(c.id); got != c.want {
			t.Errorf("%s: Judge(%q) = %v, want %v", c.name, c.id, got, c.want)
		}
		if got := Dead(c.id); got != (c.want == Gone) {
			t.Errorf("%s: Dead(%q) = %v", c.name, c.id, got)
		}
		if got := Foreign(c.id); got != c.foreign {
			t.Errorf("%s: Foreign(%q) = %v, want %v", c.name, c.id, got, c.foreign)
		}
		if local := strings.HasSuffix(c.id, "-"+f[3]); Local(c.id) != local {
			t.Errorf("%s: Local(%q) = %v, want %v", c.name, c.id, !local, local)
		}
	}
}

func TestParseStart(t *testing.T) {
	for _, c := range []struct {
		stat  string
		want  uint64
		state procState
	}{
		{"28123 (cat) R 28116 28116 3564 0 -1 4194304 124 0 0 0 0 0 0 0 20 0 1 0 85400 3133440 394", 85400, procFound},
		{"7 (a) b) (c) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0", 99, procFound},
		{"7 (short) S 1", 0, procUnknown},
		{"no parenthesis", 0, procUnknown},
	} {
		got, state := parseStart(c.stat)
		if got != c.want || state != c.state {
			t.Errorf("parseStart(%q) = %d, %v; want %d, %v", c.stat, got, state, c.want, c.state)
		}
	}
}
