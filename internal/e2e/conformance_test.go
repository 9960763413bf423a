package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// conformanceDir pins the official MCP conformance runner and the Node.js
// it needs (package.json, package-lock.json; scripts/deps.sh installs it),
// and holds expected-failures.yaml: the scenarios and checks that cannot
// apply to codexec, each with its reason (see docs/conformance.md).
const conformanceDir = "testdata/conformance"

// conformanceRevisions are the protocol revisions whose requirement sets
// the runner checks: the last one with sessions, and the stateless one.
var conformanceRevisions = []string{"2025-11-25", "2026-07-28"}

var conformanceTotal = regexp.MustCompile(`Total: (\d+) passed, (\d+) failed`)

// TestConformance runs the runner against --http for each revision's
// requirement set: every scenario and check outside expected-failures.yaml
// passes, and every one inside it still fails (a stale entry fails too).
func TestConformance(t *testing.T) {
	sameInEveryMode(t, "protocol conformance; no scenario runs code")
	dir, _ := filepath.Abs(conformanceDir)
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	runner := filepath.Join(dir, "node_modules", ".bin", "conformance")
	for _, p := range []string{node, runner} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("conformance runner not installed: %s missing (bash scripts/deps.sh installs it with npm ci)", p)
		}
	}
	s := startHTTP(t, "")
	for _, rev := range conformanceRevisions {
		t.Run(rev, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, runner, "server", "--url", s.URL+"/mcp", "--requirements", rev,
				"--expected-failures", filepath.Join(dir, "expected-failures.yaml"), "--output-dir", t.TempDir())
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
			out, err := cmd.CombinedOutput()
			m := conformanceTotal.FindSubmatch(out)
			if err != nil || m == nil || string(m[1]) == "0" || !strings.Contains(string(out), "Baseline check passed") {
				t.Fatalf("requirements of %s (%v):\n%s", rev, err, tail(string(out), 6000))
			}
			t.Logf("%s: %s checks passed, %s failed (all expected: not applicable)", rev, m[1], m[2])
		})
	}
}
