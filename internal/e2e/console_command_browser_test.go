package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// consoleURLRE is the line `codexec console` prints on stderr.
var consoleURLRE = regexp.MustCompile(`console: (http://127\.0\.0\.1:\d+/console/login\?token=\S+)`)

// startConsoleCommand runs `codexec console` on dataDir and returns the
// one-time URL it prints; it is stopped at cleanup.
func startConsoleCommand(t *testing.T, dataDir string) string {
	t.Helper()
	cmd := exec.Command(binary(t), "console", "-addr", "127.0.0.1:0")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8",
		"CODEXEC_DATA_DIR=" + dataDir, "LOG_LEVEL=debug"}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("codexec console's log:\n%s", tail(stderr.String(), 6000))
		}
	})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := consoleURLRE.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("codexec console printed no URL within 30s:\n%s", stderr.String())
	return ""
}

// TestConsoleCommandInBrowser: a person who runs codexec over stdio opens
// `codexec console`'s printed URL and reads the history the stdio server
// wrote, read-only; the URL's token works once.
func TestConsoleCommandInBrowser(t *testing.T) {
	sameInEveryMode(t, "the console reads the history; one sandbox mode shows it")
	if chromiumPath() == "" {
		t.Skip("chromium is not installed (scripts/deps.sh installs Debian's chromium package)")
	}
	s := start(t)
	word := fmt.Sprintf("stdioword%d", time.Now().UnixNano()%1_000_000_000)
	if r, err := callExec(t, s.Session, "bash", "echo "+word); err != nil || !r.Success {
		t.Fatalf("the stdio run: %v %+v", err, r)
	}
	url := startConsoleCommand(t, s.DataDir)
	base := url[:strings.Index(url, "/console/")]

	b := newBrowser(t, 60*time.Second)
	status, h := b.open(url)
	if status != 200 || !strings.HasSuffix(b.location(), "/console/") {
		t.Fatalf("the printed URL: status %d at %s, want the overview", status, b.location())
	}
	c := &consoleTab{t: t, b: b, s: &httpServer{t: t, URL: base}, who: b.text("#principal")}
	if c.who == "" || c.who == "not signed in" {
		t.Fatalf("logged in with the printed URL as %q", c.who)
	}
	c.checkPage("/console/ from the printed URL", h)
	c.page("/console/history?q=" + word)
	if n := b.count("tr.execution"); n != 1 {
		t.Errorf("the console finds %d runs of the stdio server printing %s, want 1", n, word)
	}
	c.page("/console/sessions")
	if n := b.count("form.close-session, form.pause-session"); n != 0 {
		t.Errorf("the read-only console offers %d close or pause buttons", n)
	}
	b.clearCookies()
	b.open(url)
	b.takeProblems() // a refused token may answer with an error status
	b.open(base + "/console/history")
	if loc := b.location(); !strings.Contains(loc, "/console/login") {
		t.Errorf("the one-time URL logged in twice: the history opened at %s", loc)
	}
}
