package container

import (
	"fmt"
	"strings"
)

// ImageError is New's error when the CLI works but the sandbox image is not
// among its local images: the mode needs it built first, from
// Dockerfile.sandbox.
type ImageError struct {
	CLI, Image string // as configured (CODEXEC_DOCKER_CLI, CODEXEC_DOCKER_IMAGE)
	Output     string // what `CLI image inspect` printed
}

func (e *ImageError) Error() string {
	return e.Missing() + "; build it from Dockerfile.sandbox in codexec's source tree: " + e.BuildCommand() +
		" (without the source tree, `codexec doctor --print-dockerfile > Dockerfile.sandbox` writes the file first)"
}

// Missing says which image is missing where, without the remedy.
func (e *ImageError) Missing() string {
	return fmt.Sprintf("image %q is not among %s's local images (%s)", e.Image, e.CLI, e.Output)
}

// BuildCommand is the command that builds the image, run in a directory
// holding Dockerfile.sandbox (the image copies nothing from it).
func (e *ImageError) BuildCommand() string {
	return fmt.Sprintf("%s build -t %s -f Dockerfile.sandbox .", e.CLI, e.Image)
}

// engineUnreachable are what docker and podman print when the CLI cannot
// reach the engine behind it (no daemon, no socket access).
var engineUnreachable = []string{"cannot connect", "is the docker daemon running", "permission denied while trying to connect", "unable to connect to podman"}

// inspectError explains why `CLI image inspect IMAGE` failed: the engine
// is out of reach (then the image may well be there), or the image is
// missing (*ImageError).
func inspectError(cli, image string, err error, out string) error {
	out = strings.Join(strings.Fields(out), " ")
	low := strings.ToLower(out)
	for _, m := range engineUnreachable {
		if strings.Contains(low, m) {
			return fmt.Errorf("%s cannot reach its container engine (%s): start the engine (for docker: systemctl start docker; "+
				"as a non-root user, join the docker group) or set CODEXEC_DOCKER_CLI to a CLI that works (podman)", cli, out)
		}
	}
	if out == "" {
		out = err.Error()
	}
	return &ImageError{CLI: cli, Image: image, Output: out}
}
