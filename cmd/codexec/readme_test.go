package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const readmePath = "../../README.md"

// readmeWordLimit keeps the front door short: a newcomer reads it in five
// minutes; reference material lives in docs/.
const readmeWordLimit = 1500

// fences returns the README's fenced code blocks of one language tag.
func fences(t *testing.T, text, lang string) []string {
	t.Helper()
	re := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

func readme(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestReadmeCommands: the README's two commands are the build the
// end-to-end harness makes and the test command CI runs, and the README
// stays under its word limit.
func TestReadmeCommands(t *testing.T) {
	text := readme(t)
	want := []string{"go build -o bin/ ./cmd/... && ./bin/codexec serve\n", "bash scripts/test.sh\n"}
	if diff := cmp.Diff(want, fences(t, text, "bash")); diff != "" {
		t.Errorf("README commands (-want +got)\n%s", diff)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "bash scripts/test.sh") {
		t.Errorf(".ci/run does not run the README's test command")
	}
	if n := len(strings.Fields(text)); n > readmeWordLimit {
		t.Errorf("README has %d words, more than %d: move reference material into docs/", n, readmeWordLimit)
	}
}

// TestReadmeClientSnippets: the client entry and the `claude mcp add` line
// in the README are the ready-made files' (which TestClientConfigs and
// TestClaudeCodeCommand check against each client's format).
func TestReadmeClientSnippets(t *testing.T) {
	text := readme(t)
	var entry map[string]map[string]json.RawMessage
	blocks := fences(t, text, "json")
	if len(blocks) == 0 || json.Unmarshal([]byte(blocks[0]), &entry) != nil {
		t.Fatalf("the README's first json block is not a client configuration: %q", blocks)
	}
	raw, err := os.ReadFile(filepath.Join(clientsDir, "claude_desktop_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	var got, want clientEntry
	_ = json.Unmarshal(entry["mcpServers"]["codexec"], &got)
	_ = json.Unmarshal(file["mcpServers"]["codexec"], &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("README client entry differs from docs/clients/claude_desktop_config.json (-file +readme)\n%s", diff)
	}
	sh, err := os.ReadFile(filepath.Join(clientsDir, "claude-code.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(sh), "\n") {
		if strings.HasPrefix(l, "claude mcp add") && !strings.Contains(text, "`"+l+"`") {
			t.Errorf("README does not show docs/clients/claude-code.sh's command %q", l)
		}
	}
}

// TestReadmeExampleResult: every field of the example result in the README
// is one of execute_code's output schema, so it cannot drift from what a
// client receives.
func TestReadmeExampleResult(t *testing.T) {
	blocks := fences(t, readme(t), "json")
	var result map[string]any
	for _, b := range blocks {
		var m map[string]any
		if json.Unmarshal([]byte(b), &m) == nil && m["execution_id"] != nil {
			result = m
		}
	}
	if result == nil {
		t.Fatal("no example execute_code result in the README")
	}
	known := executeCodeFields(t)
	for k := range result {
		if !known[k] {
			t.Errorf("README example result has %q, which execute_code's output schema does not", k)
		}
	}
}

// executeCodeFields reads execute_code's output fields from the tool schema
// snapshot.
func executeCodeFields(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile("../../internal/mcpserver/testdata/tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var tools []struct {
		Name         string `json:"name"`
		OutputSchema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"outputSchema"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name == "execute_code" {
			known := map[string]bool{}
			for k := range tl.OutputSchema.Properties {
				known[k] = true
			}
			return known
		}
	}
	t.Fatal("execute_code not in the schema snapshot")
	return nil
}

// TestDocLinks: every relative link in the README and docs/ names a file
// that exists, so a section moved into docs/ stays reachable.
func TestDocLinks(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, readmePath, "../../SECURITY.md", "../../docs/clients/README.md")
	link := regexp.MustCompile(`\]\(([^)#:\s]+)(#[^)]*)?\)`)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(raw), -1) {
			target := filepath.Join(filepath.Dir(f), m[1])
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, m[1])
			}
		}
	}
}
