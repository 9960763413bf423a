package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// updateScreenshotsEnv, set to 1, makes browser tests write their
// screenshots to docs/console (the pictures docs/console.md shows).
const updateScreenshotsEnv = "CODEXEC_UPDATE_SCREENSHOTS"

// maxScreenshotBytes keeps the committed screenshots small.
const maxScreenshotBytes = 200 << 10

// browser is one headless Chromium (Debian's, driven over the DevTools
// protocol by chromedp) with its own temporary profile, killed at cleanup.
// It records what the page's console reports as an error (exceptions,
// console.error, Content-Security-Policy violations, failed loads) so a
// test can assert a page ran clean.
type browser struct {
	t   testing.TB
	ctx context.Context

	mu       sync.Mutex
	problems []string
}

// chromiumPath is the Chromium binary, or "" when none is installed.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts Chromium headless with a 1280×800 viewport; every
// action of the test must finish within limit. It skips the test when
// Chromium is not installed.
func newBrowser(t testing.TB, limit time.Duration) *browser {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("chromium is not installed (scripts/deps.sh installs Debian's chromium package)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
		chromedp.Flag("disable-dev-shm-usage", true), // containers' /dev/shm is small
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its own sandbox
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	ctx, cancelTime := context.WithTimeout(ctx, limit)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() }) // cancelAlloc waits for Chromium to exit
	b := &browser{t: t, ctx: ctx}
	b.run(chromedp.EmulateViewport(1280, 800)) // starts Chromium
	go b.record()
	return b
}

// record keeps the console messages that mean a page did not run clean:
// errors and exceptions, and whatever the security part of the browser
// reports (Content-Security-Policy violations).
func (b *browser) record() {
	for m, err := range chromedp.Console(b.ctx) {
		if err != nil {
			return // the browser is gone
		}
		if m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleException && m.Source != "security" {
			continue
		}
		if strings.HasSuffix(m.URL, "/favicon.ico") {
			continue // the browser asks for it by itself, whatever the page says
		}
		b.mu.Lock()
		b.problems = append(b.problems, fmt.Sprintf("%s %s: %s (%s)", m.Source, m.Type, m.Text, m.URL))
		b.mu.Unlock()
	}
}

// takeProblems returns what the console reported since the last call.
func (b *browser) takeProblems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.problems
	b.problems = nil
	return p
}

// clean fails the test if the console reported anything since the last
// check; step says where.
func (b *browser) clean(step string) {
	b.t.Helper()
	// Console events are delivered asynchronously: let those of the
	// last load arrive.
	b.run(chromedp.Sleep(100 * time.Millisecond))
	for _, p := range b.takeProblems() {
		b.t.Errorf("%s: browser console: %s", step, p)
	}
}

// run performs actions, failing the test on error.
func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// navigate runs actions that load a new page (a navigation, a link
// clicked, a form submitted) and returns the response's status and
// headers once the page has loaded.
func (b *browser) navigate(actions ...chromedp.Action[chromedp.Void]) (int, network.Headers) {
	b.t.Helper()
	resp, err := chromedp.RunResponse(b.ctx, actions...)
	if err != nil {
		b.t.Fatalf("browser: %v", err)
	}
	return int(resp.Status), resp.Headers
}

// open loads url and returns its status and headers.
func (b *browser) open(url string) (int, network.Headers) {
	b.t.Helper()
	return b.navigate(chromedp.Navigate(url))
}

// evalAs evaluates a JavaScript expression in b's page.
func evalAs[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("browser: %s: %v", expr, err)
	}
	return v
}

// count is the number of elements matching a CSS selector.
func (b *browser) count(sel string) int {
	b.t.Helper()
	return evalAs[int](b, fmt.Sprintf("document.querySelectorAll(%q).length", sel))
}

// text is the text content of the first element matching sel, "" when
// there is none.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return evalAs[string](b, fmt.Sprintf("(document.querySelector(%q) || {}).textContent || ''", sel))
}

// location is the page's URL.
func (b *browser) location() string {
	b.t.Helper()
	return evalAs[string](b, "location.href")
}

// screenshot writes the viewport to docs/console/name.png when
// CODEXEC_UPDATE_SCREENSHOTS=1; the file must stay under 200 KB.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	if os.Getenv(updateScreenshotsEnv) != "1" {
		return
	}
	raw, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	// Chromium compresses for speed; the committed copy is re-encoded
	// for size.
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&out, img); err != nil {
		b.t.Fatal(err)
	}
	if out.Len() > maxScreenshotBytes {
		b.t.Errorf("screenshot %s is %d bytes, over %d", name, out.Len(), maxScreenshotBytes)
	}
	path := filepath.Join("..", "..", "docs", "console", name+".png")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// headerValue is a response header's value, whatever its case.
func headerValue(h network.Headers, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return fmt.Sprint(v)
		}
	}
	return ""
}

// clearCookies forgets every cookie, as a new browser profile would.
func (b *browser) clearCookies() {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		b.t.Fatalf("browser: clearing cookies: %v", err)
	}
}
