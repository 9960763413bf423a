// Package console serves codexec's web console under /console: the
// execution history with search and filters, one execution (code, output,
// artifacts, network, tool calls), live sessions and contexts, background
// runs and an overview, as server-rendered HTML that reads without
// JavaScript.
//
// It reads through narrow interfaces (the history's logindex.Browser, the
// session and run managers, the file store) and never touches paths
// itself. Who sees what is decided here: a principal sees only its own
// executions, sessions, runs and files (another principal's id answers 404,
// like an unknown one); operators see all. Every page carries a strict
// Content-Security-Policy (no inline script or style), and every action
// that changes something is a POST with a CSRF token tied to the login
// cookie.
package console

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/session"
	"github.com/codexec/codexec/internal/sessionckpt"
)

// Prefix is the path the console is served under.
const Prefix = "/console"

// Sessions is what the console needs of the session manager.
type Sessions interface {
	// List returns ctx's principal's sessions and contexts.
	List(ctx context.Context) []session.Info
	// ListAll returns every principal's (the operator view).
	ListAll() []session.Owned
	// Stop closes ctx's principal's session id.
	Stop(ctx context.Context, id, reason string, waitRunning bool) (session.CloseInfo, error)
	// Pause checkpoints ctx's principal's session id and frees its memory.
	Pause(ctx context.Context, id string) (sessionckpt.PauseInfo, error)
	// CheckpointsEnabled reports whether sessions can be paused here.
	CheckpointsEnabled() bool
}

// Runs is what the console needs of the background-run keeper.
type Runs interface {
	// List returns ctx's principal's runs, newest first.
	List(ctx context.Context, status string, limit int) []runs.Summary
	// ListAll returns every principal's (the operator view).
	ListAll(limit int) []runs.Owned
	// OwnerOf names the principal of a run held here.
	OwnerOf(id string) (string, bool)
	// Get reads ctx's principal's run id (runs.ErrNotFound otherwise).
	Get(ctx context.Context, id string, rd runs.Read) (runs.View, error)
}

// Files is what the console needs of the store of kept artifacts: reads of
// ctx's principal's items (files.ErrNotFound for anyone else's).
type Files interface {
	Get(ctx context.Context, id string) (files.Item, error)
	Read(ctx context.Context, id, path string, offset, length, max int64) ([]byte, files.Entry, error)
}

// Options configure a console. History is required; Sessions, Runs and
// Files may be nil (their pages then say so).
type Options struct {
	History  logindex.Browser
	Sessions Sessions
	Runs     Runs
	Files    Files
	// Verifier checks the token a user logs in with (the one /mcp uses);
	// nil, with no OneTimeToken, means no login: every request is the
	// local principal's (a loopback server without auth).
	Verifier auth.TokenVerifier
	// Scopes are required of a login token, as of /mcp's.
	Scopes []string
	// OneTimeToken, when set, is accepted once at /console/login?token=…
	// and logs the local principal in (codexec console).
	OneTimeToken string
	// Operators are principals that see every principal's data.
	Operators []string
	// ReadOnly hides and refuses the close and pause actions (codexec
	// console, which reads another server's data directory).
	ReadOnly bool
	// Key signs the login cookie (at least 32 bytes); empty: a random
	// key for this process (logins end with it).
	Key []byte
	// Secure marks the cookie Secure (the listener serves TLS).
	Secure bool
	// CookieTTL is how long a login lasts (default 12 hours).
	CookieTTL time.Duration
}

// Console serves the console's pages. Make one with New.
type Console struct {
	opts   Options
	keys   *keys
	once   *oneTime
	pages  *pages
	static http.Handler
}

// New makes a console from o.
func New(o Options) (*Console, error) {
	if o.CookieTTL <= 0 {
		o.CookieTTL = 12 * time.Hour
	}
	k, err := newKeys(o.Key)
	if err != nil {
		return nil, err
	}
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Console{opts: o, keys: k, once: newOneTime(o.OneTimeToken), pages: p, static: staticHandler()}, nil
}

// Handler returns the console's routes, all under Prefix, with the
// security headers on every answer. The caller puts its Host and Origin
// checks in front; authentication is the console's own (cookie).
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET "+Prefix+"/static/", c.static)
	mux.HandleFunc("GET "+Prefix+"/login", c.loginPage)
	mux.HandleFunc("POST "+Prefix+"/login", c.login)
	mux.HandleFunc("POST "+Prefix+"/logout", c.logout)
	mux.HandleFunc("GET "+Prefix+"/{$}", c.authed(c.overview))
	mux.HandleFunc("GET "+Prefix+"/history", c.authed(c.history))
	mux.HandleFunc("GET "+Prefix+"/executions/{id}", c.authed(c.execution))
	mux.HandleFunc("GET "+Prefix+"/executions/{id}/files/{path...}", c.authed(c.artifact))
	mux.HandleFunc("GET "+Prefix+"/sessions", c.authed(c.sessions))
	mux.HandleFunc("POST "+Prefix+"/sessions/{id}/close", c.authed(c.posted(c.closeSession)))
	mux.HandleFunc("POST "+Prefix+"/sessions/{id}/pause", c.authed(c.posted(c.pauseSession)))
	mux.HandleFunc("GET "+Prefix+"/runs", c.authed(c.runList))
	mux.HandleFunc("GET "+Prefix+"/runs/{id}", c.authed(c.run))
	mux.Handle(Prefix, http.RedirectHandler(Prefix+"/", http.StatusFound))
	return secure(mux)
}

// csp is the policy of every answer: nothing inline, nothing foreign, no
// framing.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'"

// secure sets the security headers every console answer carries.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		// same-origin, not no-referrer: under no-referrer browsers send
		// "Origin: null" with a form's POST, which the listener's Origin
		// check refuses (no login, logout or close would work); no
		// referrer leaves the site either way.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// operator reports whether p sees every principal's data.
func (c *Console) operator(p string) bool { return slices.Contains(c.opts.Operators, p) }

// fail answers an error page; err is logged, not shown (it may name
// paths or hosts).
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, msg string, err error) {
	if err != nil {
		slog.Warn("console", "path", r.URL.Path, "status", status, "err", err)
	}
	v := viewer(r)
	c.render(w, status, "error", page{Title: http.StatusText(status), Viewer: v, Data: msg})
}
