package e2e

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// browserRuns is what the browser test makes through MCP as alice before it
// looks at the console: a run that prints word and writes a PNG, a run
// printing hostile output, a failed run, two live sessions and a background
// run.
type browserRuns struct {
	word, plotID, hostileID string
	closeSID, keepSID       string
	runID                   string
}

// consolePlotCode prints %[1]s and writes plot.png: a matplotlib line chart
// where the sandbox's python has matplotlib, else a gradient written with
// the standard library.
const consolePlotCode = `import struct, zlib
print("%[1]s")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.figure(figsize=(4, 2.5), dpi=80)
    plt.plot([0, 1, 2, 3, 4, 5], [3, 1, 4, 1, 5, 9], marker="o")
    plt.title("%[1]s")
    plt.tight_layout()
    plt.savefig("plot.png")
    plt.close("all")
except ImportError:
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    w, h = 160, 100
    raw = b"".join(b"\x00" + b"".join(bytes((x * 255 // w, y * 255 // h, 160)) for x in range(w)) for y in range(h))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    open("plot.png", "wb").write(png + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
`

// consoleHostileCode prints markup and a terminal escape sequence, which
// the console must show as text.
const consoleHostileCode = `print('<script>window.pwned=1</script>')
print('<img src=x onerror="window.pwned=2">')
print('\x1b[31mred\x1b[0m')
`

// consoleHostileShown is consoleHostileCode's output as the console must
// show it: the markup as typed, the escape character as a visible ␛.
var consoleHostileShown = []string{
	`<script>window.pwned=1</script>`,
	`<img src=x onerror="window.pwned=2">`,
	"␛[31mred␛[0m",
}

// makeBrowserRuns makes alice's runs and sessions through MCP.
func makeBrowserRuns(t *testing.T, alice *mcp.ClientSession) browserRuns {
	t.Helper()
	r := browserRuns{word: fmt.Sprintf("consoleword%d", time.Now().UnixNano()%1_000_000_000)}
	plot := tenantOK(t, alice, "execute_code", map[string]any{"language": "python", "code": fmt.Sprintf(consolePlotCode, r.word)})
	if plot["success"] != true || !slices.Contains(plot["artifacts"].([]any), any("plot.png")) {
		t.Fatalf("the plot run: %v", plot)
	}
	r.plotID = plot["execution_id"].(string)
	r.hostileID = tenantOK(t, alice, "execute_code", map[string]any{"language": "python", "code": consoleHostileCode})["execution_id"].(string)
	tenantCall(t, alice, "execute_code", map[string]any{"language": "python", "code": "print('half way')\n1 / 0\n"}) // a failed run
	for _, sid := range []*string{&r.closeSID, &r.keepSID} {
		*sid = tenantOK(t, alice, "start_session", map[string]any{"language": "python"})["session_id"].(string)
		tenantOK(t, alice, "send_to_session", map[string]any{"session_id": *sid, "code": "total = 41"})
	}
	r.runID = tenantOK(t, alice, "execute_code", map[string]any{"language": "python", "background": true,
		"code": "import time\nfor i in range(3):\n    print('step', i, flush=True)\ntime.sleep(60)\n"})["execution_id"].(string)
	t.Cleanup(func() { tenantCall(t, alice, "cancel_run", map[string]any{"execution_id": r.runID}) })
	return r
}

// TestConsoleInBrowser: the console in headless Chromium. Alice logs in
// with her token, finds a run made through MCP by a word it printed, sees
// its stdout and its plot, sees hostile output as text, sees her live
// sessions, closes one and pauses the other (MCP then agrees), and sees her
// background run's output; bob, logged in with his token, sees none of
// it; ops, an operator, sees alice's runs and sessions but cannot close
// them. No page logs an error or a Content-Security-Policy violation.
// With CODEXEC_UPDATE_SCREENSHOTS=1 it writes docs/console/*.png.
func TestConsoleInBrowser(t *testing.T) {
	sameInEveryMode(t, "the console reads the history and sessions; one sandbox mode shows it")
	if chromiumPath() == "" {
		t.Skip("chromium is not installed (scripts/deps.sh installs Debian's chromium package)")
	}
	tokens := tokenFile(t)
	appendFile(t, tokens, opsToken+" ops\n")
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokens, "CODEXEC_CONSOLE_OPERATORS=ops")
	alice := s.mustConnect(aliceToken)
	runs := makeBrowserRuns(t, alice)

	began := time.Now()
	c := &consoleTab{t: t, b: newBrowser(t, 90*time.Second), s: s}
	c.login(aliceToken, "alice", true)
	c.overview()
	img := c.findAndOpenRun(runs)
	c.hostileRun(runs.hostileID)
	c.backgroundRun(runs.runID)
	c.closeSession(alice, runs)
	c.logout()
	c.login(bobToken, "bob", false)
	c.seesNoneOf(runs, img)
	c.logout()
	c.login(opsToken, "ops", false)
	c.operatorSees(runs)
	t.Logf("browser steps took %v", time.Since(began).Round(time.Millisecond))
}

// consoleTab is a browser tab on one server's console, logged in as who.
type consoleTab struct {
	t   *testing.T
	b   *browser
	s   *httpServer
	who string
}

// page opens a console page, which must answer 200 with the console's
// security headers, its navigation, the logged-in principal and no
// console errors.
func (c *consoleTab) page(path string) {
	c.t.Helper()
	status, h := c.b.open(c.s.URL + path)
	if status != 200 {
		c.t.Fatalf("GET %s: status %d", path, status)
	}
	c.checkPage(path, h)
}

// checkPage checks the page the tab shows, loaded from path with headers h.
func (c *consoleTab) checkPage(path string, h network.Headers) {
	c.t.Helper()
	csp := headerValue(h, "Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			c.t.Errorf("%s: Content-Security-Policy %q lacks %q", path, csp, want)
		}
	}
	if got := headerValue(h, "X-Content-Type-Options"); got != "nosniff" {
		c.t.Errorf("%s: X-Content-Type-Options %q", path, got)
	}
	if c.b.count("nav#console-nav") != 1 {
		c.t.Errorf("%s: no nav#console-nav", path)
	}
	if got := c.b.text("#principal"); !strings.Contains(got, c.who) {
		c.t.Errorf("%s: #principal says %q, want %s", path, got, c.who)
	}
	c.b.clean(path)
}

// login logs in through the form with token and lands on the overview.
func (c *consoleTab) login(token, who string, shoot bool) {
	c.t.Helper()
	status, _ := c.b.open(c.s.URL + "/console/login")
	if status != 200 || c.b.count(`input[name="token"]`) != 1 {
		c.t.Fatalf("login page: status %d, token fields %d", status, c.b.count(`input[name="token"]`))
	}
	c.b.clean("login page")
	if shoot {
		c.b.screenshot("login")
	}
	c.b.run(chromedp.SetValue(chromedp.CSS(`input[name="token"]`), token))
	status, h := c.b.navigate(chromedp.Submit(chromedp.CSS(`input[name="token"]`)))
	if loc := c.b.location(); status != 200 || !strings.HasSuffix(loc, "/console/") {
		c.t.Fatalf("after login as %s: status %d at %s: %s", who, status, loc, c.b.text("body"))
	}
	c.who = who
	c.checkPage("/console/ after login", h)
}

// overview checks the overview's chart and figures.
func (c *consoleTab) overview() {
	c.t.Helper()
	for _, sel := range []string{"svg#runs-chart", "#p50", "#p90", "#warm-rate", "#denied"} {
		if c.b.count(sel) != 1 {
			c.t.Errorf("overview: no %s", sel)
		}
	}
	c.b.screenshot("overview")
}

// findAndOpenRun searches the history for the plot run's word, opens the
// run and checks its stdout and image; it returns the image's URL.
func (c *consoleTab) findAndOpenRun(r browserRuns) string {
	c.t.Helper()
	c.page("/console/history")
	if n := c.b.count("table#history tr.execution"); n < 3 {
		c.t.Errorf("history lists %d runs, want at least 3", n)
	}
	c.b.screenshot("history")
	c.b.run(chromedp.SetValue(chromedp.CSS("form#search input#q"), r.word))
	_, h := c.b.navigate(chromedp.Submit(chromedp.CSS("form#search")))
	c.checkPage("history search", h)
	if n := c.b.count("table#history tr.execution"); n != 1 {
		c.t.Fatalf("searching %s lists %d runs, want 1", r.word, n)
	}
	_, h = c.b.navigate(chromedp.Click(chromedp.CSS("tr.execution a.execution-link")))
	if loc := c.b.location(); !strings.HasSuffix(loc, "/console/executions/"+r.plotID) {
		c.t.Fatalf("the run's link went to %s, want its execution %s", loc, r.plotID)
	}
	c.checkPage("run", h)
	if got := c.b.text("pre#stdout"); !strings.Contains(got, r.word) {
		c.t.Errorf("the run's stdout %q lacks %s", got, r.word)
	}
	for _, sel := range []string{"pre#code", "#status", "#duration", "#end-reason"} {
		if c.b.count(sel) != 1 {
			c.t.Errorf("run page: no %s", sel)
		}
	}
	if w := evalAs[int](c.b, "(document.querySelector('img.artifact') || {}).naturalWidth || 0"); w == 0 {
		c.t.Errorf("the run's plot did not load as an image")
	}
	if n := c.b.count("a.artifact-download"); n < 1 {
		c.t.Errorf("the run page offers %d downloads, want plot.png", n)
	}
	c.b.screenshot("run")
	c.b.run(chromedp.Evaluate[chromedp.Void]("document.querySelector('pre#stdout').previousElementSibling.scrollIntoView()"))
	c.b.screenshot("run-files")
	return evalAs[string](c.b, "document.querySelector('img.artifact').src")
}

// hostileRun checks that markup and escape sequences a run printed are
// shown as text: nothing ran, no element came from them.
func (c *consoleTab) hostileRun(id string) {
	c.t.Helper()
	c.page("/console/executions/" + id)
	got := c.b.text("pre#stdout")
	for _, want := range consoleHostileShown {
		if !strings.Contains(got, want) {
			c.t.Errorf("hostile stdout shows %q, want the text %q", got, want)
		}
	}
	if p := evalAs[string](c.b, "typeof window.pwned"); p != "undefined" {
		c.t.Errorf("the run's output ran in the page: window.pwned is %s", p)
	}
	if n := c.b.count(`pre#stdout *, img[src="x"], script:not([src])`); n != 0 {
		c.t.Errorf("the run's output made %d elements", n)
	}
}

// backgroundRun checks the runs list and one run's live output tail.
func (c *consoleTab) backgroundRun(id string) {
	c.t.Helper()
	c.page("/console/runs")
	if n := c.b.count(fmt.Sprintf("table#runs tr.run[data-run-id=%q]", id)); n != 1 {
		c.t.Errorf("runs page lists the background run %d times", n)
	}
	c.b.screenshot("runs")
	deadline := time.Now().Add(15 * time.Second)
	for {
		c.page("/console/runs/" + id)
		if strings.Contains(c.b.text("pre#output-tail"), "step 2") {
			break
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the run's output tail never showed step 2: %q", c.b.text("pre#output-tail"))
		}
		time.Sleep(300 * time.Millisecond)
	}
	if c.b.count(`meta[http-equiv="refresh"]`) != 1 {
		c.t.Errorf("a running run's page does not refresh itself")
	}
	c.b.screenshot("run-output")
}

// closeSession checks alice's live sessions and closes one from the page.
func (c *consoleTab) closeSession(alice *mcp.ClientSession, r browserRuns) {
	c.t.Helper()
	c.page("/console/sessions")
	row := func(sid string) string { return fmt.Sprintf("table#sessions tr.session[data-session-id=%q]", sid) }
	for _, sid := range []string{r.closeSID, r.keepSID} {
		// Pause is offered only where sessions can be checkpointed.
		if c.b.count(row(sid)) != 1 || c.b.count(row(sid)+" form.close-session") != 1 {
			c.t.Fatalf("sessions page: %s is not listed with its close button", sid)
		}
	}
	c.b.screenshot("sessions")
	status, h := c.b.navigate(chromedp.Submit(chromedp.CSS(row(r.closeSID) + " form.close-session")))
	if status != 200 {
		c.t.Fatalf("closing a session: status %d", status)
	}
	c.checkPage("sessions after close", h)
	if c.b.count(row(r.closeSID)) != 0 || c.b.count(row(r.keepSID)) != 1 {
		c.t.Errorf("after closing %s the page lists it %d times and %s %d times", r.closeSID, c.b.count(row(r.closeSID)), r.keepSID, c.b.count(row(r.keepSID)))
	}
	if res := tenantCall(c.t, alice, "send_to_session", map[string]any{"session_id": r.closeSID, "code": "total"}); !res.IsError {
		c.t.Errorf("the closed session still runs code: %s", text(res))
	}
	for _, s := range tenantOK(c.t, alice, "list_sessions", nil)["sessions"].([]any) {
		if s.(map[string]any)["session_id"] == r.closeSID {
			c.t.Errorf("list_sessions still lists the closed session: %v", s)
		}
	}
	c.pauseSession(alice, row(r.keepSID), r.keepSID)
}

// pauseSession pauses the session of row sel from the page, where this
// server offers pause; MCP then lists it paused.
func (c *consoleTab) pauseSession(alice *mcp.ClientSession, sel, sid string) {
	c.t.Helper()
	if c.b.count(sel+" form.pause-session") == 0 {
		c.t.Logf("no pause button: sessions cannot be checkpointed on this host")
		return
	}
	status, h := c.b.navigate(chromedp.Submit(chromedp.CSS(sel + " form.pause-session")))
	if status != 200 {
		c.t.Fatalf("pausing a session: status %d: %s", status, c.b.text("main"))
	}
	c.checkPage("sessions after pause", h)
	if got := c.b.text(sel + " td.state"); !strings.Contains(got, "paused") {
		c.t.Errorf("after pausing, the page says the session is %q", got)
	}
	found := false
	for _, s := range tenantOK(c.t, alice, "list_sessions", nil)["sessions"].([]any) {
		if m := s.(map[string]any); m["session_id"] == sid {
			found = true
			if m["status"] != "paused" {
				c.t.Errorf("after pausing from the page, MCP lists the session as %v", m["status"])
			}
		}
	}
	if !found {
		c.t.Errorf("after pausing from the page, MCP does not list the session")
	}
}

// logout logs out with the header's button; the console then asks
// for a token again.
func (c *consoleTab) logout() {
	c.t.Helper()
	c.b.navigate(chromedp.Submit(chromedp.CSS(`form[action$="/console/logout"]`)))
	c.b.clean("logout")
	c.b.open(c.s.URL + "/console/history")
	if loc := c.b.location(); !strings.Contains(loc, "/console/login") {
		c.t.Errorf("after logout the history opened at %s, want the login page", loc)
	}
	c.who = ""
}

// seesNoneOf checks that the tab's principal (not alice) sees none of
// alice's runs, sessions and files; img is the URL of alice's plot.
func (c *consoleTab) seesNoneOf(r browserRuns, img string) {
	c.t.Helper()
	c.page("/console/history?q=" + r.word)
	if n := c.b.count("tr.execution"); n != 0 {
		c.t.Errorf("%s finds %d of alice's runs", c.who, n)
	}
	for _, path := range []string{"/console/executions/" + r.plotID, "/console/runs/" + r.runID, strings.TrimPrefix(img, c.s.URL)} {
		if status, _ := c.b.open(c.s.URL + path); status != 404 {
			c.t.Errorf("%s opens alice's %s: status %d, want 404", c.who, path, status)
		}
		c.expectOnly404(path)
	}
	c.page("/console/sessions")
	if n := c.b.count("tr.session"); n != 0 {
		c.t.Errorf("%s sees %d sessions, alice's %s among them: %v", c.who, n, r.keepSID, c.b.count(fmt.Sprintf("tr.session[data-session-id=%q]", r.keepSID)) > 0)
	}
	c.page("/console/runs")
	if n := c.b.count("tr.run"); n != 0 {
		c.t.Errorf("%s sees %d background runs", c.who, n)
	}
}

// expectOnly404 drains the browser's console after a page that answered
// 404 on purpose: the failed load is all it may report.
func (c *consoleTab) expectOnly404(path string) {
	c.t.Helper()
	c.b.run(chromedp.Sleep(100 * time.Millisecond))
	for _, p := range c.b.takeProblems() {
		if !strings.HasPrefix(p, "network error") || !strings.Contains(p, "404") {
			c.t.Errorf("%s: browser console: %s", path, p)
		}
	}
}

// opsToken is the bearer token of the operator principal "ops".
const opsToken = "ops-e2e-token-0123456789abc"

// appendFile appends text to the file at path.
func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(text)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// operatorSees checks that an operator finds alice's run and live session,
// filters by principal, and gets no buttons on sessions it does not own.
func (c *consoleTab) operatorSees(r browserRuns) {
	c.t.Helper()
	c.page("/console/history?principal=alice&q=" + r.word)
	if n := c.b.count(fmt.Sprintf("tr.execution[data-execution-id=%q]", r.plotID)); n != 1 || c.b.count("input#principal-filter") != 1 {
		c.t.Errorf("the operator's history: alice's run listed %d times, principal filter %d", n, c.b.count("input#principal-filter"))
	}
	c.page("/console/executions/" + r.plotID)
	if got := c.b.text("pre#stdout"); !strings.Contains(got, r.word) {
		c.t.Errorf("the operator sees alice's run's stdout as %q", got)
	}
	c.page("/console/sessions")
	row := fmt.Sprintf("tr.session[data-session-id=%q]", r.keepSID)
	if c.b.count(row) != 1 || c.b.count(row+" form") != 0 {
		c.t.Errorf("the operator's sessions: alice's %s listed %d times with %d forms, want once with none", r.keepSID, c.b.count(row), c.b.count(row+" form"))
	}
}
