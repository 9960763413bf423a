package mcpserver_test

import (
	"testing"

	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

// TestMain lets the test binary act as the sandbox helper: the tests build
// the whole server in subprocess mode, whose runs re-execute the binary
// (sandbox-fsize) when no codexec-sandbox is installed next to it.
func TestMain(m *testing.M) { sandboxtest.Main(m) }
