package helper

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWatchdogApply: each registration line changes what the watchdog will
// kill, and a malformed one is refused without changing anything.
func TestWatchdogApply(t *testing.T) {
	cases := []struct {
		line       string
		wantErr    bool
		groups     map[int]bool
		cgroups    map[string]bool
		containers map[[2]string]bool
		clean      bool
	}{
		{line: "group 42", groups: map[int]bool{7: true, 42: true}},
		{line: "ungroup 7", groups: map[int]bool{}},
		{line: "ungroup 99", groups: map[int]bool{7: true}},
		{line: "containers " + strconv.Quote("/usr/bin/po dman") + " " + strconv.Quote("codexec.instance=1-2-3-4"),
			groups: map[int]bool{7: true}, containers: map[[2]string]bool{{"/usr/bin/po dman", "codexec.instance=1-2-3-4"}: true}},
		{line: "clean", groups: map[int]bool{7: true}, clean: true},
		{line: "cgroup " + strconv.Quote("/sys/fs/cgroup/pids/codexec/1-2-3-4.server"), groups: map[int]bool{7: true},
			cgroups: map[string]bool{"/sys/fs/cgroup/pids/codexec/1-2-3-4.server": true}},
		{line: "cgroup " + strconv.Quote("relative/dir"), wantErr: true, groups: map[int]bool{7: true}},
		{line: "cgroup /unquoted", wantErr: true, groups: map[int]bool{7: true}},
		{line: "group 1", wantErr: true, groups: map[int]bool{7: true}},
		{line: "group -5", wantErr: true, groups: map[int]bool{7: true}},
		{line: "group x", wantErr: true, groups: map[int]bool{7: true}},
		{line: "containers podman label", wantErr: true, groups: map[int]bool{7: true}},
		{line: "kill everything", wantErr: true, groups: map[int]bool{7: true}},
	}
	for _, c := range cases {
		t.Run(c.line, func(t *testing.T) {
			w := &watchdog{groups: map[int]bool{7: true}, cgroups: map[string]bool{}, containers: map[[2]string]bool{}}
			err := w.apply(c.line)
			if (err != nil) != c.wantErr {
				t.Fatalf("apply(%q) = %v, want error %v", c.line, err, c.wantErr)
			}
			if c.containers == nil {
				c.containers = map[[2]string]bool{}
			}
			if c.cgroups == nil {
				c.cgroups = map[string]bool{}
			}
			if diff := cmp.Diff(c.cgroups, w.cgroups); diff != "" {
				t.Errorf("cgroups (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.groups, w.groups); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.containers, w.containers); diff != "" {
				t.Errorf("containers (-want +got):\n%s", diff)
			}
			if w.clean != c.clean {
				t.Errorf("clean %v, want %v", w.clean, c.clean)
			}
		})
	}
}

// TestWatchdogMarkerPrefix: the watchdog takes only a run marker prefix
// naming one server, never one that every process could carry.
func TestWatchdogMarkerPrefix(t *testing.T) {
	cases := map[string]bool{
		"CODEXEC_RUN=123-456-abcdef01-4026531836/": true,
		"CODEXEC_RUN=123/":                         true,
		"PATH=/":                                   false,
		"PATH=/usr/":                               false,
		"CODEXEC_RUN=/":                            false,
		"=x/":                                      false,
		"CODEXEC_RUN=x":                            false,
		"":                                         false,
	}
	for prefix, want := range cases {
		if got := markerPrefix(prefix); got != want {
			t.Errorf("markerPrefix(%q) = %v, want %v", prefix, got, want)
		}
	}
}
