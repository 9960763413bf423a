//go:build linux

package container

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/sandbox"
)

// TestParseHeld: the engine's own report decides which limits a rootless
// engine applies; what it does not list is not held.
func TestParseHeld(t *testing.T) {
	cases := []struct {
		name, out string
		podman    bool
		want      heldLimits
	}{
		{"podman rootful v1", "[cpuset cpu cpuacct blkio memory devices freezer pids]\n", true, heldLimits{true, true, true}},
		{"podman rootless v2, memory and pids delegated", "[memory pids]", true, heldLimits{memory: true, pids: true}},
		{"podman rootless v1", "[]", true, heldLimits{}},
		{"podman cpuset only is no cpu", "[cpuset cpuacct]", true, heldLimits{}},
		{"docker all", "true true true\n", false, heldLimits{true, true, true}},
		{"docker rootless no cpu", "true true false", false, heldLimits{memory: true, pids: true}},
		{"docker unreadable", "<no value>", false, heldLimits{}},
	}
	for _, c := range cases {
		if got := parseHeld(c.out, c.podman); got != c.want {
			t.Errorf("%s: parseHeld(%q) = %+v, want %+v", c.name, c.out, got, c.want)
		}
	}
}

// TestEnforced: a container run reports the engine's limits only for the
// limits set and applied, and its /tmp tmpfs with the size runArgs gives it.
func TestEnforced(t *testing.T) {
	all := sandbox.Limits{MemoryBytes: 512 << 20, CPUs: 1, Pids: 100, DiskBytes: 1 << 30}
	cases := []struct {
		name string
		held heldLimits
		spec sandbox.Spec
		want sandbox.Enforcement
	}{
		{"rootful, all set", heldLimits{true, true, true}, sandbox.Spec{Limits: all},
			sandbox.Enforcement{Memory: "container", Pids: "container", CPU: "container", Disk: "tmpfs 1 GiB"}},
		{"no limits set: default tmpfs", heldLimits{true, true, true}, sandbox.Spec{},
			sandbox.Enforcement{Memory: "none", Pids: "none", CPU: "none", Disk: "tmpfs 256 MiB"}},
		{"rootless without cpu", heldLimits{memory: true, pids: true}, sandbox.Spec{Limits: all},
			sandbox.Enforcement{Memory: "container", Pids: "container", CPU: "none", Disk: "tmpfs 1 GiB"}},
		{"nothing applied", heldLimits{}, sandbox.Spec{Limits: all},
			sandbox.Enforcement{Memory: "none", Pids: "none", CPU: "none", Disk: "tmpfs 1 GiB"}},
		{"tmp dir: its own bound", heldLimits{true, true, true}, sandbox.Spec{Limits: all, TmpDir: "/x"},
			sandbox.Enforcement{Memory: "container", Pids: "container", CPU: "container", Disk: "none"}},
	}
	for _, c := range cases {
		b := &Backend{held: c.held}
		if diff := cmp.Diff(c.want, b.Enforced(c.spec)); diff != "" {
			t.Errorf("%s: Enforced (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestRunArgsMatchEnforced: the options runArgs passes are the ones
// Enforced reports.
func TestRunArgsMatchEnforced(t *testing.T) {
	b := &Backend{opts: Options{Network: "none", UID: 65534, Image: "img"}}
	a := b.runArgs(sandbox.Spec{Limits: sandbox.Limits{MemoryBytes: 64 << 20, CPUs: 0.5, Pids: 7}}, "n", "/w", "/workspace", []string{"true"})
	for _, want := range [][2]string{{"--memory", "67108864"}, {"--cpus", "0.5"}, {"--pids-limit", "7"}, {"--tmpfs", "/tmp:rw,size=268435456,mode=1777"}} {
		if !hasPair(a, want[0], want[1]) {
			t.Errorf("run args %q lack %s %s", a, want[0], want[1])
		}
	}
}

func hasPair(a []string, k, v string) bool {
	for i := 0; i+1 < len(a); i++ {
		if a[i] == k && a[i+1] == v {
			return true
		}
	}
	return false
}
