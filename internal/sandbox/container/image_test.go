package container

import (
	"errors"
	"strings"
	"testing"
)

// TestInspectError: a CLI that cannot reach its engine is told apart from a
// missing image, and a missing image's error carries the build command with
// the configured CLI and image.
func TestInspectError(t *testing.T) {
	exit := errors.New("exit status 1")
	cases := []struct {
		name, out string
		missing   bool
		want      string
	}{
		{"podman: image not known", "Error: inspecting object: img: image not known", true,
			"podman build -t img -f Dockerfile.sandbox ."},
		{"docker: no such image", "Error: No such image: img", true, "podman build -t img -f Dockerfile.sandbox ."},
		{"docker daemon down", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?", false,
			"cannot reach its container engine"},
		{"socket permission", "permission denied while trying to connect to the Docker daemon socket", false, "cannot reach its container engine"},
	}
	for _, c := range cases {
		err := inspectError("podman", "img", exit, c.out)
		var ie *ImageError
		if errors.As(err, &ie) != c.missing {
			t.Errorf("%s: %v: missing image = %t, want %t", c.name, err, !c.missing, c.missing)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q lacks %q", c.name, err, c.want)
		}
	}
}
