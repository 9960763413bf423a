package e2e

import (
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPlotsClean: a matplotlib plot, one-shot and in a session, returns its
// image and nothing else in every sandbox mode the host has: no stderr (no
// "Fontconfig error"), and no font or matplotlib caches among the artifacts.
func TestPlotsClean(t *testing.T) {
	sameInEveryMode(t, "pins its sandbox modes")
	if err := exec.Command("/usr/bin/python3", "-c", "import matplotlib").Run(); err != nil {
		t.Skip("python3-matplotlib is not installed (scripts/deps.sh installs it)")
	}
	for _, mode := range []string{"namespace", "subprocess", "docker"} {
		t.Run(mode, func(t *testing.T) {
			env := []string{"CODEXEC_SANDBOX_MODE=" + mode, "CODEXEC_SANDBOX_DIR=" + aclFreeDir(t)}
			if mode == "docker" {
				env = append(mplDockerEnv(t), env[1])
			}
			if why := modeAvailable(t, mode, env...); why != "" {
				t.Skipf("%s mode unavailable on this host:\n%s", mode, why)
			}
			checkPlotClean(t, start(t, env...))
		})
	}
}

func checkPlotClean(t *testing.T, s *server) {
	// findSystemFonts asks fc-list, as matplotlib does when it builds its
	// font list: a broken font configuration shows in stderr and cache files.
	code := "import matplotlib.pyplot as plt, matplotlib.font_manager as fm\n" +
		"fm.findSystemFonts()\n" +
		"plt.figure(figsize=(4, 3), dpi=50)\nplt.plot([1, 3, 2])\nplt.savefig('plot.png')\n"
	r, res := s.exec(map[string]any{"language": "python", "code": code})
	if r.Status != "success" {
		t.Fatalf("plot run: %+v", r)
	}
	checkImage(t, res, 200, 150)
	if diff := cmp.Diff([]string{"plot.png"}, r.Artifacts); diff != "" || r.Stderr != "" {
		t.Errorf("one-shot: artifacts (-want +got):\n%s\nstderr: %q", diff, r.Stderr)
	}
	sess := s.startSession("python")
	var sr execResult
	res = s.callInto("send_to_session", map[string]any{"session_id": sess.SessionID, "code": code + "plt.plot([2, 1])\nplt.show()\n"}, &sr)
	if sr.Status != "success" {
		t.Fatalf("session plot: %+v", sr)
	}
	checkImage(t, res, 200, 150)
	if diff := cmp.Diff([]string{".codexec/plots/figure-1.png", "plot.png"}, sr.Artifacts); diff != "" || sr.Stderr != "" {
		t.Errorf("session: artifacts (-want +got):\n%s\nstderr: %q", diff, sr.Stderr)
	}
}
