package container

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/codexec/codexec/internal/sandbox"
)

// closeEgress takes a run's sockets and closes them at once.
type closeEgress struct{}

func (closeEgress) Serve(c *sandbox.Capture) { _ = c.Close() }

func TestUnsupportedOn(t *testing.T) {
	offLinux := []string{
		"warm containers: Linux only, runs start cold",
		"network through the egress proxy: Linux only, runs have no network",
		"mounting a caller's directory with its owner's rights: Linux only, such runs are refused",
	}
	for _, tc := range []struct {
		goos string
		want []string
	}{
		{"linux", nil},
		{"darwin", offLinux},
		{"windows", offLinux},
		{"freebsd", offLinux},
	} {
		t.Run(tc.goos, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, unsupportedOn(tc.goos)); diff != "" {
				t.Errorf("unsupportedOn(%q) (-want +got):\n%s", tc.goos, diff)
			}
		})
	}
}

func TestAdaptTo(t *testing.T) {
	capture := &sandbox.CaptureSpec{ProxyPort: 3128, DNS: true}
	full := Options{Image: "img", Pool: sandbox.PoolOptions{Size: 2}, CaptureSpec: capture}
	cold := Options{Image: "img"}
	for _, tc := range []struct {
		name, goos string
		in, want   Options
		notes      []string // words each note must hold, in order
	}{
		{"linux keeps warm containers and capture", "linux", full, full, nil},
		{"darwin drops both", "darwin", full, cold, []string{"no warm containers on darwin", "no network on darwin"}},
		{"darwin without either", "darwin", cold, cold, nil},
		{"windows drops the pool", "windows", Options{Pool: sandbox.PoolOptions{Size: 1}}, Options{}, []string{"no warm containers on windows"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, notes := adaptTo(tc.goos, tc.in)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
			if len(notes) != len(tc.notes) {
				t.Fatalf("notes = %q, want %d holding %q", notes, len(tc.notes), tc.notes)
			}
			for i, n := range notes {
				if !strings.Contains(n, tc.notes[i]) || !strings.Contains(n, "Linux") {
					t.Errorf("note %d = %q, want it to say %q and why (Linux)", i, n, tc.notes[i])
				}
			}
		})
	}
}

func TestRefusal(t *testing.T) {
	owner := &sandbox.Owner{UID: 1000, GID: 1000}
	for _, tc := range []struct {
		name, goos string
		spec       sandbox.Spec
		want       string // "" for none
	}{
		{"linux with network", "linux", sandbox.Spec{Egress: closeEgress{}}, ""},
		{"linux with owner", "linux", sandbox.Spec{Dir: "/home/u/p", DirOwner: owner}, ""},
		{"darwin plain run", "darwin", sandbox.Spec{Dir: "/tmp/w"}, ""},
		{"darwin with network", "darwin", sandbox.Spec{Egress: closeEgress{}}, "asks for network, which docker mode cannot give on darwin"},
		{"darwin with owner", "darwin", sandbox.Spec{Dir: "/Users/u/p", DirOwner: owner}, "/Users/u/p cannot be mounted with its owner's rights on darwin"},
		{"windows with network", "windows", sandbox.Spec{Egress: closeEgress{}}, "cannot give on windows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refusal(tc.goos, tc.spec)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refusal = %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Linux")):
				t.Errorf("refusal = %v, want one saying %q and why (Linux)", err, tc.want)
			}
		})
	}
}

func TestHandsOver(t *testing.T) {
	for _, tc := range []struct {
		goos string
		euid int
		want bool
	}{
		{"linux", 0, true},
		{"linux", 1000, true},
		{"darwin", 0, true},
		{"darwin", 501, false},
		{"windows", -1, false},
	} {
		if got := handsOver(tc.goos, tc.euid); got != tc.want {
			t.Errorf("handsOver(%q, %d) = %v, want %v", tc.goos, tc.euid, got, tc.want)
		}
	}
}
