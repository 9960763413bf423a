package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// doctorLines are the prefixes of doctor's report lines, in order; indented
// lines (warm runners, build commands) belong to the line above.
var doctorLines = []string{"configured mode:", "subprocess:", "namespace:", "warm runners:", "docker:", "disk limit:",
	"upstreams:", "host ACLs:"}

// TestDoctor: doctor reports every mode, the disks, upstreams and ACLs in
// that order on stdout; a configured mode that cannot run (docker with an
// image that does not exist) exits 1 and prints the exact command that
// builds the image from Dockerfile.sandbox with the configured CLI and
// image name, and the same with the Dockerfile the binary carries.
func TestDoctor(t *testing.T) {
	cli := "podman"
	if _, err := exec.LookPath(cli); err != nil {
		t.Skip("podman not installed: cannot check docker mode's missing-image report")
	}
	image := "codexec-doctor-test-no-such-image"
	env := []string{"CODEXEC_POOL_SIZE=0", "CODEXEC_SANDBOX_MODE=docker", "CODEXEC_DOCKER_CLI=" + cli, "CODEXEC_DOCKER_IMAGE=" + image}
	out, errOut, code := runCLI(t, env, "doctor")
	if code != 1 {
		t.Errorf("exit %d, want 1 (the configured docker mode cannot run)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var got []string
	for _, l := range strings.Split(out, "\n") {
		for _, p := range doctorLines {
			if strings.HasPrefix(l, p) {
				got = append(got, p)
			}
		}
	}
	want := doctorLines
	if strings.Contains(out, "namespace: UNAVAILABLE") { // no warm runner line without the namespace sandbox
		want = append(append([]string{}, doctorLines[:3]...), doctorLines[4:]...)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("report lines (-want +got)\n%s\n%s", diff, out)
	}
	build := cli + " build -t " + image + " -f Dockerfile.sandbox ."
	for _, w := range []string{
		`docker: UNAVAILABLE: image "` + image + `" is not among podman's local images`,
		"\n    " + build + "\n",
		"\n    codexec doctor --print-dockerfile > Dockerfile.sandbox && " + build + "\n",
		"error: configured mode docker cannot run: ",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("doctor output lacks %q:\n%s", w, out)
		}
	}
	if regexp.MustCompile(`probe failed: exit \d+ signal \d+`).MatchString(out) {
		t.Errorf("doctor still explains a failed probe by exit codes only:\n%s", out)
	}
}

// TestPrintDockerfile: doctor --print-dockerfile prints the repository's
// Dockerfile.sandbox exactly, so an installed binary can build the image.
func TestPrintDockerfile(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile.sandbox"))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, nil, "doctor", "--print-dockerfile")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("printed Dockerfile (-want +got)\n%s", diff)
	}
}

// TestServerInfoVersion: the version a client sees in initialize is the
// one `codexec version` prints.
func TestServerInfoVersion(t *testing.T) {
	out, _, code := runCLI(t, nil, "version")
	first, _, _ := strings.Cut(out, "\n")
	want, ok := strings.CutPrefix(first, "codexec ")
	if code != 0 || !ok {
		t.Fatalf("version: exit %d, %q", code, out)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = cliEnv(t, []string{"CODEXEC_SANDBOX_MODE=subprocess", "CODEXEC_POOL_SIZE=0"})
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ServerInfo.Version; got != want {
		t.Errorf("serverInfo.version %q, codexec version %q", got, want)
	}
}
