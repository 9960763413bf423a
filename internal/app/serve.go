package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/authn"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/httpserve"
	"github.com/codexec/codexec/internal/mcpserver"
	"github.com/codexec/codexec/internal/metrics"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/stdiowire"
	"github.com/codexec/codexec/internal/tracing"
	"github.com/codexec/codexec/internal/upstream"
)

// killWait bounds the wait for cancelled calls to return at shutdown.
const killWait = 10 * time.Second

// serveStdio serves one client on stdin/stdout. On SIGTERM/SIGINT (ctx)
// running calls get the shutdown grace to finish, then are cancelled;
// when stdin closes they are cancelled at once.
func (a *App) serveStdio(ctx context.Context, cfg config.Config) error {
	slog.Info("codexec serving on stdio", "version", mcpserver.Version, "sandbox", a.backend.Name())
	stop := context.AfterFunc(ctx, func() {
		slog.Info("shutting down: refusing new calls, waiting for running ones", "running", a.Server.Running(), "grace", cfg.Remote.ShutdownGrace)
	})
	defer stop()
	// A client that closes stdin has left: nobody will wait for a running
	// call, so its run is cancelled at once (nothing it started keeps
	// running) and the call is answered as cancelled before the session
	// ends, for a client that still reads stdout.
	inputEnded := func() {
		if n := a.Server.InputEnded(0, killWait); n > 0 {
			slog.Info("stdin closed: the client left; running calls were cancelled and answered", "cancelled", n)
		}
	}
	wire := stdiowire.New(os.Stdin, os.Stdout, stdiowire.Options{MaxLineBytes: stdioMaxLine(cfg), Logger: slog.Default(), InputEnded: inputEnded, Delivered: a.Server.NoteRead})
	n, err := a.Server.ServeUntil(ctx, wire.Transport(), cfg.Remote.ShutdownGrace, killWait)
	if n > 0 {
		slog.Warn("shutdown grace expired: running calls were killed", "killed", n)
	}
	if err == io.EOF || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// stdioMaxLine is the longest message line the stdio transport takes: the
// HTTP body cap, or more when an upload_file of CODEXEC_MAX_UPLOAD_BYTES
// needs more in base64 (stdio has one client, so one such buffer).
func stdioMaxLine(cfg config.Config) int {
	upload := (cfg.MaxUploadBytes+2)/3*4 + 1<<20
	return int(max(cfg.Remote.MaxBodyBytes, upload))
}

// serveHTTP serves MCP Streamable HTTP with auth, probes and metrics.
func (a *App) serveHTTP(ctx context.Context, cfg config.Config) error {
	r := cfg.Remote
	m := metrics.New()
	a.instrument(m)
	tracing.ExportRegistry(m.Registry()) // exported over OTLP too when metric export is on
	o := httpserve.Options{
		Addr: r.HTTPAddr, TLSCert: r.TLSCert, TLSKey: r.TLSKey, Resource: r.Resource(), Scopes: r.OAuthScopes,
		AllowedOrigins: r.AllowedOrigins, AllowedHosts: r.AllowedHosts, Metrics: m, Grace: r.ShutdownGrace,
		MCP: a.Server.HTTPHandler(mcpserver.HTTPOptions{MaxBodyBytes: r.MaxBodyBytes, SessionTimeout: cfg.SessionIdleTimeout,
			MaxSessionsPerPrincipal: r.MaxMCPSessionsPerPrincipal}),
		Ready: a.ready,
		Drain: func(ctx context.Context) int { return a.Server.Shutdown(ctx, killWait) },
	}
	if err := a.authOptions(ctx, r, m, &o); err != nil {
		return err
	}
	if err := a.wireConsole(cfg, &o); err != nil {
		return err
	}

	o.Listening = func(addr net.Addr) {
		slog.Info("http listening", "addr", addr.String(), "version", mcpserver.Version, "sandbox", a.backend.Name())
	}
	a.wireTransfers(cfg, &o)
	a.wireReplica(ctx, cfg, &o)
	stop := context.AfterFunc(ctx, func() { a.draining.Store(true) })
	defer stop()
	return httpserve.Serve(ctx, o)
}

// wireTransfers serves the transfer URLs and, once the listener is bound,
// sets the address they are built on: this replica's own (CODEXEC_REPLICA_ADDR,
// default the bound address) when replicas share sessions, since only the
// replica that issued a URL can serve it; else the public base of
// CODEXEC_RESOURCE_URL, or the bound address.
func (a *App) wireTransfers(cfg config.Config, o *httpserve.Options) {
	if a.transfers == nil {
		return
	}
	o.Files = a.Server.FilesHandler()
	listening := o.Listening
	o.Listening = func(addr net.Addr) {
		listening(addr)
		a.transfers.SetBase(transferBase(cfg, addr.String(), a.replicas != nil))
	}
}

// transferBase is the URL prefix transfer URLs are built on, for a server
// bound to addr (see wireTransfers).
func transferBase(cfg config.Config, addr string, replicated bool) string {
	switch {
	case replicated && cfg.Replica.Addr != "":
		return cfg.Replica.Addr
	case !replicated && cfg.Remote.ResourceURL != "":
		return strings.TrimSuffix(strings.TrimRight(cfg.Remote.ResourceURL, "/"), "/mcp")
	}
	return cfg.Remote.Scheme() + "://" + addr
}

// authOptions configures token-file and JWT verification when enabled.
func (a *App) authOptions(ctx context.Context, r config.Remote, m *metrics.Metrics, o *httpserve.Options) error {
	if !r.AuthEnabled() {
		return nil
	}
	v := &authn.Verifier{OnFailure: m.AuthFailure}
	if r.AuthTokens != "" {
		tf, err := authn.LoadTokenFile(r.AuthTokens)
		if err != nil {
			return err
		}
		slog.Info("bearer tokens loaded", "path", r.AuthTokens, "tokens", tf.Len())
		v.Tokens = tf
	}
	if r.OAuthIssuer != "" {
		j, err := authn.NewJWT(ctx, authn.JWTOptions{Issuer: r.OAuthIssuer, JWKSURL: r.OAuthJWKSURL, Resource: r.Resource(), Leeway: 30 * time.Second})
		if err != nil {
			return fmt.Errorf("CODEXEC_OAUTH_ISSUER: %w", err)
		}
		v.JWT = j
		o.AuthServers = []string{r.OAuthIssuer}
	}
	o.Verifier = v.Verify
	return nil
}

// instrument feeds m from the execution log and the MCP server. Other
// packages add theirs with m.GaugeFunc / m.Counter (pool sizes, upstream
// calls).
func (a *App) instrument(m *metrics.Metrics) {
	mode := a.backend.Name()
	if l := a.logger; l != nil {
		l.ObserveExecutions(func(e execlog.Entry) {
			sm := e.SandboxMode
			if sm == "" {
				sm = mode
			}
			m.Execution(e.Language, e.Status, sm, time.Duration(e.DurationMs)*time.Millisecond)
			m.RunCost(runCost(e))
		})
	}
	m.GaugeFunc("mcp_sessions", "Connected MCP sessions (clients).", func() float64 { return float64(a.Server.LiveSessions()) })
	m.GaugeFunc("running_calls", "Tool calls in progress.", func() float64 { return float64(a.Server.Running()) })
	if st := a.store; st != nil {
		m.CounterFunc("store_queries_total", "Statements sent to the shared PostgreSQL store (round trips).", func() float64 { return float64(st.Queries()) })
	}
	if a.egress.Enabled() {
		m.EgressConnections(a.egress.Stats)
	}
	if p, ok := a.backend.(sandbox.Pooled); ok {
		m.WarmPool(func() []metrics.PoolSample { return poolSamples(p) })
	}
	if a.upstreams != nil {
		calls := m.Counter("upstream_calls_total", "Upstream MCP tool calls made by code-mode programs.", "server", "outcome")
		a.upstreams.Observe(func(s upstream.Stat) {
			outcome := "ok"
			if s.Err != nil {
				outcome = "error"
			}
			calls.WithLabelValues(s.Server, outcome).Inc()
		})
	}
}

// ready is /readyz: the server is not draining, and the sandbox can run at
// least one language (the start-up health check marks the ones that
// cannot).
func (a *App) ready(context.Context) error {
	if a.draining.Load() {
		return errors.New("draining: shutting down, finishing running calls")
	}
	var errs []string
	for _, lang := range []string{runtime.Python, runtime.Node, runtime.Bash} {
		err := a.Engine.LanguageError(lang)
		if err == nil {
			return nil
		}
		errs = append(errs, lang+": "+err.Error())
	}
	return fmt.Errorf("sandbox %s cannot run any language (%s)", a.backend.Name(), strings.Join(errs, "; "))
}

// poolSamples is the pool's state per language kind for /metrics: the
// kinds' runners summed (one per flags, mounts and limits) and their tallies.
func poolSamples(p sandbox.Pooled) []metrics.PoolSample {
	byKind := map[string]*metrics.PoolSample{}
	get := func(kind string) *metrics.PoolSample {
		if byKind[kind] == nil {
			byKind[kind] = &metrics.PoolSample{Kind: kind}
		}
		return byKind[kind]
	}
	for _, st := range p.PoolStats() {
		s := get(st.Kind)
		s.Ready, s.Starting, s.MemoryBytes = s.Ready+st.Ready, s.Starting+st.Starting, s.MemoryBytes+st.MemoryBytes
	}
	for _, t := range p.PoolTallies() {
		s := get(t.Kind)
		s.Warm, s.Cold = t.Warm, t.Cold
	}
	out := make([]metrics.PoolSample, 0, len(byKind))
	for _, s := range byKind {
		out = append(out, *s)
	}
	return out
}

// runCost is what the metrics record of a log entry's end and usage.
func runCost(e execlog.Entry) metrics.Cost {
	c := metrics.Cost{EndReason: e.EndReason}
	u := e.Usage
	if u == nil {
		return c
	}
	c.Sandbox, c.MemoryPeakBytes = u.Sandbox, u.MemoryPeakBytes
	if u.CPUUserMs != nil && u.CPUSystemMs != nil {
		c.CPUKnown = true
		c.CPUUser, c.CPUSystem = time.Duration(*u.CPUUserMs)*time.Millisecond, time.Duration(*u.CPUSystemMs)*time.Millisecond
	}
	if u.WrittenBytes != nil {
		c.WrittenBytes = *u.WrittenBytes
	}
	if u.NetworkBytes != nil {
		c.NetworkBytes = *u.NetworkBytes
	}
	return c
}
