package app

import (
	"testing"

	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

// TestMain lets this test binary act as the sandbox helper: the backends
// the tests start re-execute it (for example sandbox-fsize when a run has
// a disk limit), as they do the codexec binary.
func TestMain(m *testing.M) { sandboxtest.Main(m) }
