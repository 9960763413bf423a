// Package codexec carries files of the source tree that the codexec binary
// needs wherever it is installed: `go install …/cmd/codexec@version` puts
// only the binary on the host. Today that is Dockerfile.sandbox, which
// builds docker mode's image and which `codexec doctor --print-dockerfile`
// prints.
package codexec

import _ "embed"

// SandboxDockerfile is the text of Dockerfile.sandbox.
//
//go:embed Dockerfile.sandbox
var SandboxDockerfile string
