package app

import (
	"testing"

	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

// TestMain lets the test binary act as the sandbox helper: Build in
// subprocess mode runs its health check through the backend, which
// re-executes the binary (sandbox-fsize) when no codexec-sandbox is
// installed next to it.
func TestMain(m *testing.M) { sandboxtest.Main(m) }
