package console_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/authn"
	"github.com/codexec/codexec/internal/console"
	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/session"
	"github.com/codexec/codexec/internal/tenant"
)

// hostile is output a run could print to attack the page that shows it.
const hostile = "<script>alert(1)</script> <img src=x onerror=alert(1)> \x1b[31mred"

// fixture is a console over a small history, a real file store and a real
// run keeper, with principals alice and bob and the operator ops.
type fixture struct {
	srv      *httptest.Server
	sessions *memSessions
	runID    string
}

func pngBytes(t *testing.T) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func newFixture(t *testing.T, mod func(*console.Options)) *fixture {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("tok-alice-0123456789 alice\ntok-bob-0123456789 bob\ntok-ops-0123456789 ops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := authn.LoadTokenFile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	store, err := files.NewDirStore(filepath.Join(dir, "artifacts"), files.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	alice := tenant.With(context.Background(), "alice")
	put := func(id, name string, data []byte) {
		if _, _, err := store.Put(alice, id, name, bytes.NewReader(data), files.WriteOptions{Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
	}
	put("exec_alice1", "plot.png", pngBytes(t))
	put("exec_alice2", "evil.png", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`))
	f := &fixture{sessions: &memSessions{byID: map[string]session.Owned{
		"sess_alice": {Owner: "alice", Info: session.Info{ID: "sess_alice", Kind: "session", Language: "python", Status: "active", StartedAt: time.Now()}},
		"sess_bob":   {Owner: "bob", Info: session.Info{ID: "sess_bob", Kind: "session", Language: "node", Status: "active", StartedAt: time.Now()}},
	}}}
	rm := runs.New(runs.Options{Dir: dir}, runs.Deps{Store: store})
	t.Cleanup(rm.Close)
	f.runID = startRun(t, alice, rm)
	o := console.Options{History: &memHistory{entries: entries()}, Sessions: f.sessions, Runs: rm, Files: store,
		Verifier: (&authn.Verifier{Tokens: tf}).Verify, Operators: []string{"ops"}}
	if mod != nil {
		mod(&o)
	}
	c, err := console.New(o)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(c.Handler())
	t.Cleanup(f.srv.Close)
	return f
}

// startRun starts a background run for ctx's principal that prints hostile
// output and runs until the test ends.
func startRun(t *testing.T, ctx context.Context, rm *runs.Manager) string {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	v, _, err := rm.Start(ctx, runs.Job{Tool: "execute_code", Run: func(ctx context.Context, obs output.Observer) (runs.Outcome, error) {
		engine.Started(ctx, "exec_run1")
		obs("stdout", []byte("tick 1\n"+hostile+"\n"))
		select {
		case <-stop:
		case <-ctx.Done():
		}
		return runs.Outcome{Status: engine.StatusCancelled, Result: map[string]string{"status": "cancelled"}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return v.ExecutionID
}

// entries are the history: alice's 25 runs (one printing hostile output,
// one with network), bob's one.
func entries() []execlog.Entry {
	now := time.Now().Add(-time.Minute)
	exit := 0
	out := []execlog.Entry{
		{ExecutionID: "exec_alice1", Owner: "alice", Tool: "execute_code", Language: "python", Code: "print('<b>hi</b>')", Stdout: hostile,
			Stderr: "warn \x1b[0m", Status: "success", ExitCode: &exit, DurationMs: 1234, ExecutedAt: now, EndReason: "exited", TraceID: "trace123",
			Network:   []egress.Entry{{Host: "evil.example", Port: 443, Reason: "not in policy", Connections: 1}},
			ToolCalls: []execlog.ToolCall{{Server: "gh", Tool: "search", ArgBytes: 10, ResultBytes: 20, DurationMs: 3}}},
		{ExecutionID: "exec_alice2", Owner: "alice", Tool: "execute_code", Language: "python", Code: "svg", Status: "success", ExecutedAt: now.Add(-time.Second)},
		{ExecutionID: "exec_bob1", Owner: "bob", Tool: "execute_code", Language: "node", Code: "console.log('bob secret')", Stdout: "bob secret", Status: "success", ExecutedAt: now},
	}
	for i := range 23 {
		out = append(out, execlog.Entry{ExecutionID: fmt.Sprintf("exec_old%02d", i), Owner: "alice", Tool: "run_code", Language: "bash",
			Code: "echo old", Status: "failed", ExecutedAt: now.Add(-time.Duration(i+2) * time.Minute)})
	}
	return out
}

// client answers without following redirects, with an optional cookie.
func (f *fixture) do(t *testing.T, method, path, cookie string, form url.Values) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, f.srv.URL+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: console.CookieName, Value: cookie})
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// login posts token and returns the login cookie's value.
func (f *fixture) login(t *testing.T, token string) string {
	t.Helper()
	resp, _ := f.do(t, "POST", "/console/login", "", url.Values{"token": {token}})
	for _, c := range resp.Cookies() {
		if c.Name == console.CookieName {
			return c.Value
		}
	}
	t.Fatalf("login with %q: status %d and no cookie", token, resp.StatusCode)
	return ""
}

var (
	csrfRE       = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	inlineScript = regexp.MustCompile(`(?i)<script`)
	inlineStyle  = regexp.MustCompile(`(?i)<style|<[a-z][^>]*\s(style|on[a-z]+)=`)
	contractCSP  = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
)

// TestPagesRender: every page renders for a logged-in principal with the
// elements the contract names, the security headers, and no inline script,
// style or event handler.
func TestPagesRender(t *testing.T) {
	f := newFixture(t, nil)
	alice := f.login(t, "tok-alice-0123456789")
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/console/", []string{`id="console-nav"`, `id="principal">alice<`, `<svg id="runs-chart"`, `id="p50"`, `id="p90"`, `id="warm-rate"`, `id="denied"`, "evil.example", `<rect class="st-success"`}},
		{"/console/history", []string{`<form method="get" action="/console/history" id="search"`, `id="q" name="q"`, `<label for="status">`, `<table id="history">`, `class="execution"`, `class="execution-link" href="/console/executions/exec_alice1"`, `id="next-page"`}},
		{"/console/history?q=old&language=bash", []string{`exec_old00`, `<option value="bash" selected>bash</option>`, `<option value="run_code">run_code</option>`}},
		{"/console/executions/exec_alice1", []string{`<pre id="code">`, `<pre id="stdout">`, `<pre id="stderr">`, `id="end-reason">exited`, `id="status"`, `id="duration">1.2 s`, `id="usage"`, `id="trace-id">trace123`, `<img class="artifact" src="/console/executions/exec_alice1/files/plot.png"`, `class="artifact-download"`, `<table id="network">`, `<table id="tool-calls">`}},
		{"/console/sessions", []string{`<table id="sessions">`, `class="session" data-session-id="sess_alice"`, `class="close-session inline"`, `class="pause-session inline"`, `action="/console/sessions/sess_alice/close"`}},
		{"/console/runs", []string{`<table id="runs">`, `class="run" data-run-id="` + f.runID + `"`}},
		{"/console/runs/" + f.runID, []string{`<pre id="output-tail">`, `tick 1`, `<meta http-equiv="refresh" content="2">`}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := f.do(t, "GET", tc.path, alice, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			checkPage(t, resp, body)
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %s", w)
				}
			}
			if strings.Contains(body, "bob") {
				t.Errorf("alice's page shows bob's data")
			}
		})
	}
}

// checkPage checks the headers and the absence of inline code every page
// must have.
func checkPage(t *testing.T, resp *http.Response, body string) {
	t.Helper()
	if got := resp.Header.Get("Content-Security-Policy"); got != contractCSP {
		t.Errorf("CSP %q, want %q", got, contractCSP)
	}
	if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q", got)
	}
	if got := resp.Header.Get("Referrer-Policy"); got != "same-origin" {
		t.Errorf("Referrer-Policy %q", got)
	}
	if n := len(inlineScript.FindAllString(body, -1)); n != 0 {
		t.Errorf("%d script elements in the page", n)
	}
	if m := inlineStyle.FindString(body); m != "" {
		t.Errorf("inline style or event handler %q in the page", m)
	}
}

// TestHostileOutputEscaped: markup and terminal escapes a run printed are
// shown as text, on the execution page and on the run's page.
func TestHostileOutputEscaped(t *testing.T) {
	f := newFixture(t, nil)
	alice := f.login(t, "tok-alice-0123456789")
	for _, path := range []string{"/console/executions/exec_alice1", "/console/runs/" + f.runID} {
		_, body := f.do(t, "GET", path, alice, nil)
		for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(1)&gt;", "␛[31mred"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: lacks %q", path, want)
			}
		}
		for _, bad := range []string{"<img src=x", "\x1b"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s: holds %q unescaped", path, bad)
			}
		}
	}
}

// TestForeignIDsNotFound: another principal's execution, file, run and
// session answer 404 like ids nobody used.
func TestForeignIDsNotFound(t *testing.T) {
	f := newFixture(t, nil)
	bob := f.login(t, "tok-bob-0123456789")
	for _, tc := range []struct{ foreign, unknown, id string }{
		{"/console/executions/exec_alice1", "/console/executions/exec_nobody", "exec_alice1"},
		{"/console/executions/exec_alice1/files/plot.png", "/console/executions/exec_nobody/files/plot.png", "exec_alice1"},
		{"/console/runs/" + f.runID, "/console/runs/exec_nobody", f.runID},
	} {
		resp, foreign := f.do(t, "GET", tc.foreign, bob, nil)
		_, unknown := f.do(t, "GET", tc.unknown, bob, nil)
		if resp.StatusCode != 404 {
			t.Errorf("%s: status %d, want 404", tc.foreign, resp.StatusCode)
		}
		if diff := cmp.Diff(unknown, strings.ReplaceAll(foreign, tc.id, "exec_nobody")); diff != "" {
			t.Errorf("%s answers unlike an unknown id (-unknown +foreign)\n%s", tc.foreign, diff)
		}
	}
	_, body := f.do(t, "GET", "/console/sessions", bob, nil)
	csrf := csrfRE.FindStringSubmatch(body)[1]
	resp, _ := f.do(t, "POST", "/console/sessions/sess_alice/close", bob, url.Values{"csrf": {csrf}})
	if resp.StatusCode != 404 || !f.sessions.has("sess_alice") {
		t.Errorf("bob closing alice's session: status %d, session still there %v; want 404 and kept", resp.StatusCode, f.sessions.has("sess_alice"))
	}
	_, body = f.do(t, "GET", "/console/history", bob, nil)
	if strings.Contains(body, "exec_alice") || !strings.Contains(body, "exec_bob1") {
		t.Errorf("bob's history shows alice's executions or lacks his own")
	}
}

// TestOperatorSeesAll: an operator sees every principal's history,
// sessions and runs, opens their executions and files, filters by
// principal, and gets no buttons for sessions that are not its own.
func TestOperatorSeesAll(t *testing.T) {
	f := newFixture(t, nil)
	ops := f.login(t, "tok-ops-0123456789")
	for _, tc := range []struct{ path, want string }{
		{"/console/history", "exec_bob1"},
		{"/console/history", "exec_alice1"},
		{"/console/history", `id="principal-filter"`},
		{"/console/executions/exec_alice1", "alice"},
		{"/console/sessions", `data-session-id="sess_bob"`},
		{"/console/runs", f.runID},
		{"/console/runs/" + f.runID, "tick 1"},
	} {
		resp, body := f.do(t, "GET", tc.path, ops, nil)
		if resp.StatusCode != 200 || !strings.Contains(body, tc.want) {
			t.Errorf("%s: status %d, want 200 showing %q", tc.path, resp.StatusCode, tc.want)
		}
	}
	_, body := f.do(t, "GET", "/console/history?principal=bob", ops, nil)
	if strings.Contains(body, "exec_alice1") || !strings.Contains(body, "exec_bob1") {
		t.Errorf("principal=bob: want bob's executions only")
	}
	_, body = f.do(t, "GET", "/console/sessions", ops, nil)
	if strings.Contains(body, "close-session") {
		t.Errorf("operator gets close buttons for other principals' sessions")
	}
	resp, _ := f.do(t, "GET", "/console/executions/exec_alice1/files/plot.png", ops, nil)
	if resp.StatusCode != 200 {
		t.Errorf("operator reading alice's file: status %d", resp.StatusCode)
	}
}

// TestCSRF: a POST without the CSRF token, or with another login's, is
// refused and changes nothing; with its own it works.
func TestCSRF(t *testing.T) {
	f := newFixture(t, nil)
	alice, bob := f.login(t, "tok-alice-0123456789"), f.login(t, "tok-bob-0123456789")
	_, bobPage := f.do(t, "GET", "/console/sessions", bob, nil)
	bobCSRF := csrfRE.FindStringSubmatch(bobPage)[1]
	for _, tc := range []struct {
		name string
		form url.Values
	}{
		{"no token", url.Values{}},
		{"another login's token", url.Values{"csrf": {bobCSRF}}},
		{"made-up token", url.Values{"csrf": {"abc"}}},
	} {
		for _, action := range []string{"close", "pause"} {
			resp, _ := f.do(t, "POST", "/console/sessions/sess_alice/"+action, alice, tc.form)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s, %s: status %d, want 403", tc.name, action, resp.StatusCode)
			}
		}
	}
	if got := f.sessions.ListAll(); len(got) != 2 || got[0].Status != "active" {
		t.Fatalf("sessions changed by refused posts: %+v", got)
	}
	_, page := f.do(t, "GET", "/console/sessions", alice, nil)
	csrf := csrfRE.FindStringSubmatch(page)[1]
	resp, _ := f.do(t, "POST", "/console/sessions/sess_alice/pause", alice, url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("pause with the token: status %d", resp.StatusCode)
	}
	_, page = f.do(t, "GET", "/console/sessions", alice, nil)
	if !strings.Contains(page, "paused, checkpointed") {
		t.Errorf("paused session not shown as paused and checkpointed")
	}
	resp, _ = f.do(t, "POST", "/console/sessions/sess_alice/close", alice, url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusSeeOther || f.sessions.has("sess_alice") {
		t.Errorf("close with the token: status %d, still there %v", resp.StatusCode, f.sessions.has("sess_alice"))
	}
	resp, _ = f.do(t, "POST", "/console/sessions/sess_bob/close", "", url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusUnauthorized || !f.sessions.has("sess_bob") {
		t.Errorf("post without login: status %d, want 401 and nothing closed", resp.StatusCode)
	}
}

// TestLogin: a bad token is refused without a cookie; a good one sets an
// HttpOnly, SameSite=Strict cookie; pages without (or with a forged)
// cookie go to the login page; logging out needs the CSRF token.
func TestLogin(t *testing.T) {
	f := newFixture(t, nil)
	for _, tok := range []string{"", "tok-nobody-0123456789", "tok-alice-0123456789 "} {
		resp, body := f.do(t, "POST", "/console/login", "", url.Values{"token": {tok}})
		if strings.TrimSpace(tok) == "tok-alice-0123456789" {
			continue
		}
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
			t.Errorf("token %q: status %d, cookies %v; want 401, none", tok, resp.StatusCode, resp.Cookies())
		}
		checkPage(t, resp, body)
	}
	resp, _ := f.do(t, "POST", "/console/login", "", url.Values{"token": {"tok-alice-0123456789"}})
	ck := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Path != "/console" {
		t.Fatalf("login: status %d, cookies %+v", resp.StatusCode, ck)
	}
	for _, cookie := range []string{"", "garbage", strings.Replace(ck[0].Value, ck[0].Value[:2], "Ym", 1) + "x"} {
		resp, _ := f.do(t, "GET", "/console/history", cookie, nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/login" {
			t.Errorf("cookie %q: status %d to %q, want the login page", cookie, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	resp, _ = f.do(t, "POST", "/console/logout", ck[0].Value, url.Values{})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("logout without CSRF: status %d", resp.StatusCode)
	}
}

// TestOneTimeToken: codexec console's link logs in once; the second use
// is refused, and typed tokens are not asked for.
func TestOneTimeToken(t *testing.T) {
	f := newFixture(t, func(o *console.Options) {
		o.Verifier, o.OneTimeToken, o.Operators, o.ReadOnly, o.Sessions, o.Runs = nil, "once-123", []string{tenant.Local}, true, nil, nil
	})
	resp, _ := f.do(t, "GET", "/console/login?token=wrong", "", nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: status %d", resp.StatusCode)
	}
	resp, _ = f.do(t, "GET", "/console/login?token=once-123", "", nil)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("first use: status %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	cookie := resp.Cookies()[0].Value
	again, _ := f.do(t, "GET", "/console/login?token=once-123", "", nil)
	if again.StatusCode != http.StatusUnauthorized || len(again.Cookies()) != 0 {
		t.Errorf("second use: status %d, cookies %v; want 401, none", again.StatusCode, again.Cookies())
	}
	resp, body := f.do(t, "GET", "/console/history", cookie, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "exec_bob1") || !strings.Contains(body, `id="principal">local<`) {
		t.Errorf("history after the link: status %d; want the operator view of every principal", resp.StatusCode)
	}
	resp, _ = f.do(t, "POST", "/console/login", "", url.Values{"token": {"tok-alice-0123456789"}})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("typed token on codexec console: status %d, want 401", resp.StatusCode)
	}
	_, body = f.do(t, "GET", "/console/sessions", cookie, nil)
	if strings.Contains(body, "close-session") {
		t.Errorf("read-only console shows close buttons")
	}
}

// TestNoAuthLocal: without a verifier or link, pages are the local
// principal's with no login, and its forms still carry a CSRF token.
func TestNoAuthLocal(t *testing.T) {
	f := newFixture(t, func(o *console.Options) { o.Verifier = nil })
	resp, body := f.do(t, "GET", "/console/sessions", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="principal">local<`) || len(resp.Cookies()) != 1 {
		t.Fatalf("status %d, cookies %v: want the local principal's page and a cookie", resp.StatusCode, resp.Cookies())
	}
	resp, _ = f.do(t, "POST", "/console/sessions/sess_alice/close", resp.Cookies()[0].Value, url.Values{})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("post without CSRF: status %d", resp.StatusCode)
	}
}

// TestArtifacts: an image is served inline under its sniffed type and
// sandboxed; a file named .png holding SVG, and any download, come as
// attachments of a neutral type.
func TestArtifacts(t *testing.T) {
	f := newFixture(t, nil)
	alice := f.login(t, "tok-alice-0123456789")
	type got struct {
		Status                 int
		Type, Disposition, CSP string
	}
	for _, tc := range []struct {
		path string
		want got
	}{
		{"/console/executions/exec_alice1/files/plot.png", got{200, "image/png", `inline; filename=plot.png`, "sandbox"}},
		{"/console/executions/exec_alice1/files/plot.png?download=1", got{200, "application/octet-stream", `attachment; filename=plot.png`, "sandbox"}},
		{"/console/executions/exec_alice2/files/evil.png", got{200, "application/octet-stream", `attachment; filename=evil.png`, "sandbox"}},
		{"/console/executions/exec_alice1/files/missing.txt", got{Status: 404, Type: "text/html; charset=utf-8", CSP: contractCSP}},
		{"/console/executions/exec_alice1/files/..%2f..%2fetc%2fpasswd", got{Status: 404, Type: "text/html; charset=utf-8", CSP: contractCSP}},
	} {
		resp, _ := f.do(t, "GET", tc.path, alice, nil)
		g := got{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"), resp.Header.Get("Content-Security-Policy")}
		if diff := cmp.Diff(tc.want, g); diff != "" {
			t.Errorf("%s (-want +got)\n%s", tc.path, diff)
		}
	}
}

// TestStoredRunOfAnother: a run that ended before the server started (its
// result read back from the file store) opens for its owner and for an
// operator, who reads it as its owner, and answers 404 to anyone else.
func TestStoredRunOfAnother(t *testing.T) {
	dir := t.TempDir()
	store, err := files.NewDirStore(filepath.Join(dir, "artifacts"), files.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	alice := tenant.With(context.Background(), "alice")
	before := runs.New(runs.Options{Dir: dir}, runs.Deps{Store: store})
	v, _, err := before.Start(alice, runs.Job{Tool: "execute_code", Run: func(ctx context.Context, obs output.Observer) (runs.Outcome, error) {
		engine.Started(ctx, "exec_stored1")
		obs("stdout", []byte("stored output\n"))
		return runs.Outcome{Status: engine.StatusSuccess, Result: map[string]string{"status": "success"}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	before.Close() // the server stops: the run's result is in the store
	after := runs.New(runs.Options{Dir: dir}, runs.Deps{Store: store})
	t.Cleanup(after.Close)
	hist := &memHistory{entries: []execlog.Entry{{ExecutionID: v.ExecutionID, Owner: "alice", Background: true, Status: "success", ExecutedAt: time.Now()}}}
	f := newFixture(t, func(o *console.Options) { o.Runs, o.History, o.Files = after, hist, store })
	for _, tc := range []struct {
		token string
		want  int
	}{{"tok-alice-0123456789", 200}, {"tok-ops-0123456789", 200}, {"tok-bob-0123456789", 404}} {
		resp, body := f.do(t, "GET", "/console/runs/"+v.ExecutionID, f.login(t, tc.token), nil)
		if resp.StatusCode != tc.want || (tc.want == 200) != strings.Contains(body, "stored output") {
			t.Errorf("%s: status %d, shows the output %v; want %d", tc.token, resp.StatusCode, strings.Contains(body, "stored output"), tc.want)
		}
	}
}
