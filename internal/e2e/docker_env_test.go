package e2e

import (
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// dockerImages remembers the test images built in this process, by name.
var dockerImages sync.Map

// dockerTestEnv returns the settings that run a server in docker mode with
// a local test image built without any registry by
// scripts/sandbox-test-image.sh (once per host; extra is "", "matplotlib"
// or "node" for the image's extra contents). Docker mode uses podman when
// the docker CLI has no engine. why says why docker mode cannot run here.
func dockerTestEnv(t testing.TB, extra string) (env []string, why string) {
	t.Helper()
	cli := "docker"
	if exec.Command("docker", "info").Run() != nil {
		cli = "podman"
	}
	if _, err := exec.LookPath(cli); err != nil {
		return nil, "no docker-compatible CLI: " + err.Error()
	}
	image := map[string]string{"": "codexec-test-sandbox", "matplotlib": "codexec-test-sandbox-mpl", "node": "codexec-test-sandbox-node"}[extra]
	if _, done := dockerImages.Load(image); !done {
		script, _ := filepath.Abs("../../scripts/sandbox-test-image.sh")
		if out, err := exec.Command("bash", script, cli, image, extra).CombinedOutput(); err != nil {
			return nil, "building " + image + " with " + cli + " failed: " + err.Error() + "\n" + string(out)
		}
		dockerImages.Store(image, true)
	}
	return []string{"CODEXEC_DOCKER_CLI=" + cli, "CODEXEC_DOCKER_IMAGE=" + image}, ""
}
