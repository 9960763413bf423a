package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// conformanceScenarios are the official runner's server scenarios that
// apply to codexec. The others are skipped because they need the fixtures
// of the suite's reference server, which codexec rightly does not have:
//   - tools-call-* and json-schema-2020-12 call test tools by fixed names
//     (test_simple_text, test_image_content, …);
//   - tools-call-sampling/-elicitation, elicitation-sep1034/1330 need tools
//     that ask the client for sampling or elicitation;
//   - resources-read-*, resources-templates-read, resources-(un)subscribe
//     and prompts-get-* read fixed test resources and prompts;
//   - completion-complete needs the completions capability (not offered);
//   - server-sse-polling checks SEP-1699 server-initiated stream closing,
//     which the go-sdk handler does not do (it reports only warnings).
var conformanceScenarios = []string{
	"server-initialize", "ping", "tools-list", "logging-set-level",
	"server-sse-multiple-streams", "dns-rebinding-protection", "resources-list", "prompts-list",
}

var conformanceResult = regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed`)

// TestConformance runs the pinned @modelcontextprotocol/conformance runner
// (testdata/conformance, installed by scripts/deps.sh) against --http.
func TestConformance(t *testing.T) {
	sameInEveryMode(t, "protocol conformance; no scenario runs code")
	runner, _ := filepath.Abs("testdata/conformance/node_modules/.bin/conformance")
	if _, err := os.Stat(runner); err != nil {
		t.Skip("conformance runner not installed (bash scripts/deps.sh installs it with npm ci)")
	}
	s := startHTTP(t, "")
	for _, sc := range conformanceScenarios {
		t.Run(sc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, runner, "server", "--url", s.URL+"/mcp", "--scenario", sc)
			cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
			out, err := cmd.CombinedOutput()
			m := conformanceResult.FindSubmatch(out)
			if err != nil || m == nil || string(m[3]) != "0" || string(m[1]) != string(m[2]) || string(m[2]) == "0" {
				t.Fatalf("scenario %s failed (%v):\n%s", sc, err, tail(string(out), 3000))
			}
			t.Logf("%s: passed %s/%s", sc, m[1], m[2])
		})
	}
}
