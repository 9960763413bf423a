package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/codexec/codexec/internal/tracing"
)

// Tool is one upstream tool in the catalogue.
type Tool struct {
	Server      string
	Name        string
	Title       string
	Description string
	// InputSchema is the tool's JSON Schema for its arguments.
	InputSchema json.RawMessage
	// Annotations are the tool's hints (read-only, destructive, …) as the
	// server declared them; nil when it declared none. Ranking uses them.
	Annotations *mcp.ToolAnnotations
}

// FullName is "server.tool", the name policies and logs use.
func (t Tool) FullName() string { return t.Server + "." + t.Name }

// Options configure a Manager. Zero values select the documented defaults.
type Options struct {
	// BaseEnv ("K=V") is the environment every stdio server starts with,
	// before the entry's own env. Nil means only the entry's env.
	BaseEnv []string
	// Policy filters the catalogue and guards calls (zero = allow all).
	Policy Policy
	// ConnectTimeout bounds one connection attempt (default 30s).
	ConnectTimeout time.Duration
	// CallTimeout bounds one tool call unless the caller's context is
	// shorter (default 60s).
	CallTimeout time.Duration
	// MaxResultBytes caps one call's converted result (default 8 MiB).
	MaxResultBytes int
	// RetryAfter is how long a failed server is left alone before the next
	// use tries to start it again (default 1s).
	RetryAfter time.Duration
	// OnCall, if set, observes every call (for metrics); it must not block.
	OnCall func(Stat)
	// Version is the client version announced to upstreams.
	Version string
}

// Stat describes one finished call, for OnCall observers.
type Stat struct {
	Server, Tool string
	Duration     time.Duration
	Err          error
}

// Manager owns the connections to every configured upstream. It is safe for
// concurrent use. Create it with New, then Start.
type Manager struct {
	opts  Options
	conns map[string]*conn
	names []string
	calls atomic.Int64
	fails atomic.Int64
	// observe is set by Observe (metrics wired after the Manager exists).
	observe atomic.Pointer[func(Stat)]
	// toolsGen counts changes of any server's tool list, so the search
	// index (see Rank) is rebuilt only when the catalogue changed.
	toolsGen atomic.Uint64
	rank     rankCache
}

// New returns a Manager for servers; nothing is started yet.
func New(servers []ServerConfig, opts *Options) *Manager {
	m := &Manager{conns: map[string]*conn{}}
	if opts != nil {
		m.opts = *opts
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&m.opts.ConnectTimeout, 30*time.Second)
	def(&m.opts.CallTimeout, 60*time.Second)
	def(&m.opts.RetryAfter, time.Second)
	if m.opts.MaxResultBytes <= 0 {
		m.opts.MaxResultBytes = 8 << 20
	}
	for _, s := range servers {
		m.conns[s.Name] = &conn{cfg: s, m: m, status: StatusIdle}
		m.names = append(m.names, s.Name)
	}
	sort.Strings(m.names)
	return m
}

// Start begins connecting to every server in the background.
func (m *Manager) Start() {
	for _, n := range m.names {
		c := m.conns[n]
		c.mu.Lock()
		if c.cfg.Err != nil {
			c.status, c.err = StatusFailed, c.cfg.Err
		} else if c.attempt == nil {
			c.startAttempt()
		}
		c.mu.Unlock()
	}
}

// Wait blocks until no connection attempt is in flight or ctx ends.
func (m *Manager) Wait(ctx context.Context) {
	for _, n := range m.names {
		c := m.conns[n]
		c.mu.Lock()
		ch := c.attempt
		c.mu.Unlock()
		if ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
	}
}

// Servers lists the configured server names, sorted.
func (m *Manager) Servers() []string { return append([]string(nil), m.names...) }

// Tools returns the catalogue: every known tool the policy allows, from
// servers that listed tools at least once, sorted by server then name. It
// waits for initial connections (bounded by ctx).
func (m *Manager) Tools(ctx context.Context) []Tool {
	m.Wait(ctx)
	var out []Tool
	for _, n := range m.names {
		for _, t := range m.conns[n].toolList() {
			if m.opts.Policy.Check(t.Server, t.Name) == nil {
				out = append(out, t)
			}
		}
	}
	return out
}

// Call calls server.tool with args (a JSON object) and returns the result as
// JSON: the structuredContent when present, else the JSON of the text
// content when it parses, else the text; content that is not text comes back
// as the content array. A tool error (isError) is returned as an error with
// the upstream's message. Denied and unknown tools fail before any call.
func (m *Manager) Call(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error) {
	start := time.Now()
	ctx, span := tracing.Start(ctx, tracer, "tools/call "+tool, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", tool),
			attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("codexec.upstream.server", server))
	}
	v, err := m.call(ctx, server, tool, args)
	tracing.End(span, err)
	m.calls.Add(1)
	if err != nil {
		m.fails.Add(1)
	}
	st := Stat{Server: server, Tool: tool, Duration: time.Since(start), Err: err}
	if m.opts.OnCall != nil {
		m.opts.OnCall(st)
	}
	if f := m.observe.Load(); f != nil {
		(*f)(st)
	}
	return v, err
}

// Observe adds an observer of every finished call (for metrics wired after
// the Manager was built); fn must not block. A later call replaces it.
func (m *Manager) Observe(fn func(Stat)) { m.observe.Store(&fn) }

func (m *Manager) call(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error) {
	c, ok := m.conns[server]
	if !ok {
		return nil, fmt.Errorf("unknown upstream server %q (configured: %s)", server, strings.Join(m.names, ", "))
	}
	if err := m.opts.Policy.Check(server, tool); err != nil {
		return nil, err
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	cctx, cancel := context.WithTimeout(ctx, m.opts.CallTimeout)
	defer cancel()
	res, err := m.send(cctx, c, tool, args)
	if errors.Is(err, errNotSent) {
		// The server died between calls and its session was already closing,
		// so the request never left: restart it now and send once more.
		res, err = m.send(cctx, c, tool, args)
	}
	var ue *unavailableError
	if errors.As(err, &ue) {
		return nil, err
	}
	if err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("%s.%s timed out after %v", server, tool, m.opts.CallTimeout)
		}
		return nil, fmt.Errorf("%s.%s failed: %w", server, tool, err)
	}
	v, err := ResultValue(res)
	if err != nil {
		return nil, fmt.Errorf("%s.%s: %w", server, tool, err)
	}
	if len(v) > m.opts.MaxResultBytes {
		return nil, fmt.Errorf("%s.%s returned %d bytes, over the %d-byte result cap", server, tool, len(v), m.opts.MaxResultBytes)
	}
	return v, nil
}

// errNotSent marks a call refused by a session that was already closing
// (the server exited before the request was written), so it is safe to retry.
var errNotSent = errors.New("request not sent: the upstream session was closing")

// unavailableError is a server that could not be (re)started or lacks the tool.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }

// send makes one attempt of a call on c's current session.
func (m *Manager) send(ctx context.Context, c *conn, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	cs, err := c.session(ctx)
	if err != nil {
		return nil, &unavailableError{fmt.Errorf("upstream %s is unavailable: %w", c.cfg.Name, err)}
	}
	if !c.hasTool(tool) {
		return nil, &unavailableError{fmt.Errorf("upstream %s has no tool %q", c.cfg.Name, tool)}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: traceMeta(ctx)})
	if err != nil && errors.Is(err, mcp.ErrConnectionClosed) && strings.Contains(err.Error(), "client is closing") {
		c.exited(cs)
		return nil, fmt.Errorf("%w: %v", errNotSent, err)
	}
	return res, err
}

// Counts returns how many calls were made and how many failed since start
// (a hook for metrics).
func (m *Manager) Counts() (calls, failures int64) { return m.calls.Load(), m.fails.Load() }

// States reports every server's state, sorted by name.
func (m *Manager) States() []State {
	out := make([]State, 0, len(m.names))
	for _, n := range m.names {
		out = append(out, m.conns[n].state())
	}
	return out
}

// Close disconnects every server (stdio servers get their stdin closed and
// are then terminated).
func (m *Manager) Close() {
	var wg sync.WaitGroup
	for _, n := range m.names {
		wg.Add(1)
		go func() { defer wg.Done(); m.conns[n].close() }()
	}
	wg.Wait()
	m.rank.close()
}

// ResultValue converts a tool result to the JSON value code sees (see Call).
func ResultValue(res *mcp.CallToolResult) (json.RawMessage, error) {
	var texts []string
	allText := true
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		} else {
			allText = false
		}
	}
	if res.IsError {
		msg := strings.Join(texts, "\n")
		if msg == "" {
			msg = "the tool reported an error without a message"
		}
		return nil, fmt.Errorf("%s", msg)
	}
	if res.StructuredContent != nil {
		return json.Marshal(res.StructuredContent)
	}
	if !allText {
		return json.Marshal(res.Content)
	}
	joined := strings.Join(texts, "\n")
	if len(texts) == 1 && json.Valid([]byte(joined)) {
		return json.RawMessage(joined), nil
	}
	return json.Marshal(joined)
}

func logger() *slog.Logger { return slog.Default().With("component", "upstream") }

// Allowed reports whether the policy lets code call server.tool (nil) or
// why not. tool may be a spelling of a tool name that differs only in case
// and separators (deleteEntities for delete_entities): the policy is
// checked against the real name.
func (m *Manager) Allowed(server, tool string) error {
	if c, ok := m.conns[server]; ok {
		for _, t := range c.toolList() {
			if fold(t.Name) == fold(tool) {
				tool = t.Name
				break
			}
		}
	}
	return m.opts.Policy.Check(server, tool)
}

// fold lowercases name and drops everything but letters and digits.
func fold(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// tracer records each upstream call as a client span.
var tracer = tracing.Tracer("github.com/codexec/codexec/internal/upstream")

// traceMeta is the _meta that carries ctx's trace to the upstream server
// (traceparent, tracestate), so its spans join the run's trace; nil while
// tracing is off.
func traceMeta(ctx context.Context) mcp.Meta {
	if !tracing.On() {
		return nil
	}
	c := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, c)
	if len(c) == 0 {
		return nil
	}
	meta := mcp.Meta{}
	for k, v := range c {
		meta[k] = v
	}
	return meta
}
