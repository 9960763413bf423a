package e2e

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// consoleClient is a browser-like client: it keeps cookies and follows
// redirects.
type consoleClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newConsoleClient(t *testing.T, base string) *consoleClient {
	jar, _ := cookiejar.New(nil)
	return &consoleClient{t: t, base: base, c: &http.Client{Jar: jar, Timeout: time.Minute}}
}

func (c *consoleClient) send(method, path string, form url.Values) (int, string, http.Header) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.c.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (c *consoleClient) get(path string) (int, string, http.Header) { return c.send("GET", path, nil) }

// login posts a token to the console's login form.
func (c *consoleClient) login(token string) {
	c.t.Helper()
	if code, body, _ := c.send("POST", "/console/login", url.Values{"token": {token}}); code != 200 || !strings.Contains(body, `id="runs-chart"`) {
		c.t.Fatalf("login: status %d, want the overview\n%s", code, tail(body, 2000))
	}
}

// pngFile is a 1×1 PNG written by the run, kept as its artifact.
const pngFile = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// TestConsoleOverHTTP: the console on a real server with two tokens shows
// alice the run she made through MCP (found by a word it printed, its
// output escaped, its image inline), her live session, which she closes
// there; bob sees none of it and gets 404 for her run.
func TestConsoleOverHTTP(t *testing.T) {
	sameInEveryMode(t, "console pages over the history, the file store and the session manager")
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t))
	alice := s.mustConnect(aliceToken)
	code := "import base64\nopen('plot.png','wb').write(base64.b64decode('" + pngFile + "'))\nprint('consolemark <script>alert(1)</script> \\x1b[31mred')"
	id := tenantOK(t, alice, "execute_code", map[string]any{"language": "python", "code": code})["execution_id"].(string)
	sid := tenantOK(t, alice, "start_session", map[string]any{"language": "python"})["session_id"].(string)

	a := newConsoleClient(t, s.URL)
	if code, _, hdr := a.get("/console/history"); code != 200 || hdr.Get("Content-Security-Policy") == "" {
		t.Fatalf("before login: status %d, CSP %q; want the login page", code, hdr.Get("Content-Security-Policy"))
	}
	a.login(aliceToken)
	_, hist, _ := a.get("/console/history?q=consolemark")
	if !strings.Contains(hist, `href="/console/executions/`+id+`"`) {
		t.Fatalf("history search for consolemark lacks %s\n%s", id, tail(hist, 3000))
	}
	code2, page, hdr := a.get("/console/executions/" + id)
	for _, want := range []string{"consolemark &lt;script&gt;alert(1)&lt;/script&gt; ␛[31mred", `<img class="artifact" src="/console/executions/` + id + `/files/plot.png"`} {
		if code2 != 200 || !strings.Contains(page, want) {
			t.Errorf("execution page (status %d) lacks %q\n%s", code2, want, tail(page, 3000))
		}
	}
	if !strings.Contains(hdr.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("execution page CSP %q", hdr.Get("Content-Security-Policy"))
	}
	if code, _, hdr := a.get("/console/executions/" + id + "/files/plot.png"); code != 200 || hdr.Get("Content-Type") != "image/png" {
		t.Errorf("plot: status %d, type %q", code, hdr.Get("Content-Type"))
	}

	b := newConsoleClient(t, s.URL)
	b.login(bobToken)
	if code, _, _ := b.get("/console/executions/" + id); code != 404 {
		t.Errorf("bob opening alice's run: status %d, want 404", code)
	}
	_, bobSessions, _ := b.get("/console/sessions")
	_, bobHist, _ := b.get("/console/history?q=consolemark")
	if strings.Contains(bobSessions, sid) || strings.Contains(bobHist, id) {
		t.Errorf("bob's console shows alice's session or run")
	}

	_, sessions, _ := a.get("/console/sessions")
	if !strings.Contains(sessions, `data-session-id="`+sid+`"`) {
		t.Fatalf("alice's sessions page lacks %s\n%s", sid, tail(sessions, 3000))
	}
	csrf := csrfField.FindStringSubmatch(sessions)[1]
	if code, _, _ := a.send("POST", "/console/sessions/"+sid+"/close", url.Values{}); code != 403 {
		t.Errorf("close without CSRF: status %d, want 403", code)
	}
	if code, after, _ := a.send("POST", "/console/sessions/"+sid+"/close", url.Values{"csrf": {csrf}}); code != 200 || strings.Contains(after, `data-session-id="`+sid+`"`) {
		t.Errorf("close with CSRF: status %d, session still listed %v", code, strings.Contains(after, sid))
	}
	if got := tenantOK(t, alice, "list_sessions", nil)["sessions"].([]any); len(got) != 0 {
		t.Errorf("sessions after closing from the console: %v", got)
	}
	checkConsoleRuns(t, a, b, startBackground(t, alice, "execute_code", map[string]any{"language": "bash", "code": "echo bgmark; sleep 2; echo bgdone"}))
	consoleCommand(t, s.DataDir, id)
}

// checkConsoleRuns: alice's background run is listed, its page refreshes itself
// while it runs and shows its output's end, and stops refreshing once it
// ended; bob gets 404 for it.
func checkConsoleRuns(t *testing.T, a, b *consoleClient, run string) {
	if _, list, _ := a.get("/console/runs"); !strings.Contains(list, `data-run-id="`+run+`"`) {
		t.Errorf("runs page lacks %s", run)
	}
	_, page, _ := a.get("/console/runs/" + run)
	if !strings.Contains(page, `http-equiv="refresh"`) || !strings.Contains(page, `<pre id="output-tail">`) {
		t.Errorf("running run's page does not refresh itself or lacks its output\n%s", tail(page, 2000))
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if _, page, _ = a.get("/console/runs/" + run); !strings.Contains(page, `http-equiv="refresh"`) {
			break
		}
	}
	if !strings.Contains(page, "bgmark\nbgdone") || strings.Contains(page, `http-equiv="refresh"`) {
		t.Errorf("ended run's page: want its whole output and no refresh\n%s", tail(page, 2000))
	}
	if code, _, _ := b.get("/console/runs/" + run); code != 404 {
		t.Errorf("bob opening alice's run: status %d, want 404", code)
	}
}

// consoleCommand runs codexec console over dataDir: its one-time URL logs
// in once, to the operator view showing run id.
func consoleCommand(t *testing.T, dataDir, id string) {
	cmd := exec.Command(binary(t), "console", "-addr", "127.0.0.1:0")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "CODEXEC_DATA_DIR=" + dataDir}
	errOut := &syncBuffer{}
	cmd.Stderr = errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	urlRE := regexp.MustCompile(`console: (http://127\.0\.0\.1:\d+)(/console/login\?token=\S+)`)
	var m []string
	for deadline := time.Now().Add(30 * time.Second); m == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		m = urlRE.FindStringSubmatch(errOut.String())
	}
	if m == nil {
		t.Fatalf("codexec console printed no URL:\n%s", errOut.String())
	}
	c := newConsoleClient(t, m[1])
	if code, body, _ := c.get(m[2]); code != 200 || !strings.Contains(body, `id="principal">local<`) {
		t.Fatalf("one-time URL: status %d\n%s", code, tail(body, 2000))
	}
	if _, hist, _ := c.get("/console/history"); !strings.Contains(hist, id) {
		t.Errorf("codexec console's history lacks %s", id)
	}
	if code, _, _ := newConsoleClient(t, m[1]).get(m[2]); code != 401 {
		t.Errorf("one-time URL used twice: status %d, want 401", code)
	}
}
