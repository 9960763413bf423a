package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tsClientDir holds the official TypeScript SDK client the test drives,
// pinned by its lockfile (installed by scripts/deps.sh, or here).
const tsClientDir = "testdata/tsclient"

// tsClient makes sure the pinned TypeScript SDK is installed and returns the
// directory, or skips when node/npm are unavailable.
func tsClient(t *testing.T) string {
	return npmPackage(t, tsClientDir, "@modelcontextprotocol/sdk", "the TypeScript SDK client")
}

// npmPackage makes sure the npm project in rel (pinned by its lockfile) has
// pkg installed, running npm ci when scripts/deps.sh did not, and returns
// its absolute directory; it skips, saying why, when node or npm are
// unavailable or the install fails (offline).
func npmPackage(t *testing.T, rel, pkg, what string) string {
	t.Helper()
	dir, _ := filepath.Abs(rel)
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed (scripts/deps.sh installs it)")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg)); err == nil {
		return dir
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skipf("%s is not installed and npm is unavailable (scripts/deps.sh installs it)", what)
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("npm ci in %s failed (offline?): %v\n%s", rel, err, out)
	}
	return dir
}

// runNodeReport runs the node script with args and env (beside PATH, HOME
// and a UTF-8 locale), kills it after limit, and decodes the one JSON
// report it prints on stdout into out.
func runNodeReport(t *testing.T, script string, env []string, limit time.Duration, out any, args ...string) {
	t.Helper()
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8"}, env...)
	cmd.Stderr = os.Stderr
	timer := time.AfterFunc(limit, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, b)
	}
	t.Logf("report: %s", b)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
}

// tsReport is what testdata/tsclient/bigfiles.mjs prints.
type tsReport struct {
	TransportErrors  []string `json:"transportErrors"`
	ClosedEarly      bool     `json:"closedEarly"`
	MaxResponseBytes int      `json:"maxResponseBytes"`
	Made             string   `json:"made"`
	DefaultRange     tsRead   `json:"defaultRange"`
	Explicit8MiB     tsRead   `json:"explicit8MiB"`
	Read6MiB         tsRead   `json:"read6MiB"`
	Read7_5MiB       tsRead   `json:"read7_5MiB"`
	Read10MiB        tsRead   `json:"read10MiB"`
	Images           struct {
		Status string `json:"status"`
		Inline int    `json:"inline"`
		Links  int    `json:"links"`
	} `json:"images"`
	CodeMode3MiB tsCodeMode `json:"codeMode3MiB"`
	CodeMode6MiB tsCodeMode `json:"codeMode6MiB"`
	ToolsAfter   int        `json:"toolsAfter"`
}

type tsCodeMode struct {
	IsError      bool   `json:"isError"`
	ResultLength int    `json:"resultLength"`
	ErrorName    string `json:"errorName"`
}

type tsRead struct {
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
	Calls  int    `json:"calls"`
	Error  string `json:"error"`
}

// TestTSClientLargeMessages: through the official TypeScript SDK client
// over stdio, a 10 MiB file downloads whole across ranges with the default
// and with a large explicit length, a 6 MiB file reads whole through
// resources/read, 7.5 and 10 MiB ones are refused there with a pointer to
// download_file, a run with eight ~1 MiB images is answered, and a code-mode
// result too large for one message is an error saying so: no message
// crosses the client's 10 MiB limit, so it keeps its connection throughout.
func TestTSClientLargeMessages(t *testing.T) {
	sameInEveryMode(t, "the client starts the server in the host's default mode")
	dir := tsClient(t)
	var r tsReport
	runNodeReport(t, filepath.Join(dir, "bigfiles.mjs"), []string{"CODEXEC_DATA_DIR=" + t.TempDir(), "CODEXEC_SANDBOX_DIR=" + aclFreeDir(t)},
		5*time.Minute, &r, binary(t), "serve")
	sums := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(r.Made), "\n") {
		if name, sum, ok := strings.Cut(l, " "); ok {
			sums[name] = sum
		}
	}
	if len(r.TransportErrors) > 0 || r.ClosedEarly || r.ToolsAfter == 0 {
		t.Fatalf("the client lost its connection: errors %q closed %v", r.TransportErrors, r.ClosedEarly)
	}
	for name, got := range map[string]tsRead{"default range": r.DefaultRange, "explicit 8 MiB": r.Explicit8MiB} {
		if got.Error != "" || got.Bytes != 10<<20 || got.SHA256 != sums["big.bin"] || got.Calls < 2 {
			t.Errorf("download_file, %s: %+v, want all 10 MiB (sha256 %s) across ranges", name, got, sums["big.bin"])
		}
	}
	if r.Read6MiB.Error != "" || r.Read6MiB.SHA256 != sums["mid.bin"] {
		t.Errorf("resources/read of 6 MiB: %+v, want the whole file", r.Read6MiB)
	}
	// 7.5 MiB is within CODEXEC_MAX_DOWNLOAD_BYTES but not one message.
	for name, got := range map[string]tsRead{"7.5 MiB": r.Read7_5MiB, "10 MiB": r.Read10MiB} {
		if !strings.Contains(got.Error, "download_file") {
			t.Errorf("resources/read of %s: %+v, want an error pointing to download_file", name, got)
		}
	}
	if r.Images.Status != "success" || r.Images.Inline == 0 || r.Images.Links != 8 {
		t.Errorf("images run: %+v, want success with inline images and 8 links", r.Images)
	}
	if r.CodeMode3MiB.IsError || r.CodeMode3MiB.ResultLength != 3<<20 {
		t.Errorf("code mode returning 3 MiB: %+v, want the whole value", r.CodeMode3MiB)
	}
	if !r.CodeMode6MiB.IsError || r.CodeMode6MiB.ErrorName != "ResultTooLarge" {
		t.Errorf("code mode returning 6 MiB: %+v, want a ResultTooLarge error", r.CodeMode6MiB)
	}
	if limit := 10 << 20; r.MaxResponseBytes >= limit {
		t.Errorf("largest response %d bytes, over the client's %d", r.MaxResponseBytes, limit)
	}
}
