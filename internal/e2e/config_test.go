package e2e

import (
	"strings"
	"testing"
)

// TestMaxTimeoutBelowDefaultComposes: CODEXEC_MAX_TIMEOUT_MS below the
// default timeout starts the server with the default lowered to the cap (and
// a warning), instead of refusing to start; the same for output truncation.
func TestMaxTimeoutBelowDefaultComposes(t *testing.T) {
	s := start(t, "CODEXEC_MAX_TIMEOUT_MS=1500", "CODEXEC_MAX_OUTPUT_CHARS=100")
	r, _ := s.exec(map[string]any{"language": "python", "code": "import time\nprint('x' * 500, flush=True)\ntime.sleep(30)"})
	if r.Status != "timeout" || r.DurationMs > 15000 || !r.Truncated || len(r.Stdout) > 200 {
		t.Fatalf("want a timeout after the lowered 1.5 s default with truncated output, got %+v", r)
	}
	log := s.Stderr.String()
	for _, w := range []string{"configuration adjusted", "lowered to 1500 ms", "CODEXEC_MAX_OUTPUT_CHARS (100)"} {
		if !strings.Contains(log, w) {
			t.Errorf("start-up log lacks %q:\n%s", w, log)
		}
	}
}
