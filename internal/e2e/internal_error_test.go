package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInternalFailureIsInternalError: a failure of the server's own (here
// its sandbox directory replaced by a file, so no workspace can be made)
// answers INTERNAL_ERROR with what failed, never INVALID_PARAMS: the
// caller did nothing wrong.
func TestInternalFailureIsInternalError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sandbox")
	s := start(t, "CODEXEC_SANDBOX_MODE=subprocess", "CODEXEC_SANDBOX_DIR="+dir, "CODEXEC_POOL_SIZE=0")
	if res, _ := s.exec(map[string]any{"language": "bash", "code": "echo ok"}); res.Status != "success" {
		t.Fatalf("first run: %s %s", res.Status, deref(res.ErrorMessage))
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, msg := toolErrorCode(t, s, "execute_code", map[string]any{"language": "bash", "code": "echo ok"})
	if code != "INTERNAL_ERROR" || !strings.Contains(msg, "workspace") {
		t.Errorf("code %s, message %q: want INTERNAL_ERROR naming the workspace", code, msg)
	}
}
