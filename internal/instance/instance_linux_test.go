package instance

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestDead(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	running := Of(cmd.Process.Pid)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	f := strings.Split(Self(), "-")
	start, _ := strconv.ParseUint(f[1], 10, 64)
	otherBoot := "00000000"
	if f[2] == otherBoot {
		otherBoot = "11111111"
	}
	for _, c := range []struct {
		name string
		id   string
		dead bool
	}{
		{"self", Self(), false},
		{"exited process", running, true},
		{"own pid, other start time", f[0] + "-" + strconv.FormatUint(start+1, 10) + "-" + f[2], true},
		{"other boot", f[0] + "-" + f[1] + "-" + otherBoot, true},
		{"malformed", "1234", false},
		{"unreadable start time", "1234-0-unknown", false},
		{"empty", "", false},
	} {
		if got := Dead(c.id); got != c.dead {
			t.Errorf("%s: Dead(%q) = %v, want %v", c.name, c.id, got, c.dead)
		}
	}
	if !Alive(Self()) || Alive("garbage") {
		t.Errorf("Alive(Self()) = %v, Alive(garbage) = %v", Alive(Self()), Alive("garbage"))
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
