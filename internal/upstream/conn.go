package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server statuses reported in State.
const (
	StatusIdle       = "idle"
	StatusConnecting = "connecting"
	StatusReady      = "ready"
	StatusFailed     = "failed"
	// StatusExited: a stdio server that was ready has exited (it is
	// restarted on its next use).
	StatusExited = "exited"
)

// State is a snapshot of one upstream for doctor and start-up logs.
type State struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	Status    string `json:"status"`
	Tools     int    `json:"tools"`
	Restarts  int    `json:"restarts"`
	Error     string `json:"error,omitempty"`
}

// conn is one upstream and its current session. Fields are guarded by mu;
// attempt is non-nil while a connection attempt runs and is closed when it
// ends.
type conn struct {
	cfg ServerConfig
	m   *Manager

	mu       sync.Mutex
	status   string
	err      error
	cs       *mcp.ClientSession
	tools    []Tool
	attempt  chan struct{}
	lastTry  time.Time
	restarts int
	stderr   *tailBuffer
	closed   bool
}

// session returns a ready session, restarting a server that exited at once
// and retrying one that failed to start when it was not tried in the last
// RetryAfter.
func (c *conn) session(ctx context.Context) (*mcp.ClientSession, error) {
	for tries := 0; ; tries++ {
		c.mu.Lock()
		switch {
		case c.status == StatusReady:
			cs := c.cs
			c.mu.Unlock()
			return cs, nil
		case c.cfg.Err != nil || c.closed:
			err := c.cfg.Err
			if err == nil {
				err = errors.New("shutting down")
			}
			c.mu.Unlock()
			return nil, err
		case c.attempt == nil && c.status != StatusExited && (tries > 0 || time.Since(c.lastTry) < c.m.opts.RetryAfter):
			err := c.err
			c.mu.Unlock()
			return nil, err
		case c.attempt == nil:
			c.startAttempt()
		}
		ch := c.attempt
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// startAttempt launches a connection attempt; c.mu must be held.
func (c *conn) startAttempt() {
	if c.status == StatusExited || c.status == StatusFailed && c.cs == nil && !c.lastTry.IsZero() {
		c.restarts++
	}
	ch := make(chan struct{})
	c.attempt, c.status, c.lastTry = ch, StatusConnecting, time.Now()
	go func() {
		defer close(ch)
		ctx, cancel := context.WithTimeout(context.Background(), c.m.opts.ConnectTimeout)
		defer cancel()
		cs, tools, err := c.connect(ctx)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.attempt = nil
		if err == nil && c.closed {
			_ = cs.Close()
			err = errors.New("shutting down")
		}
		if err != nil {
			c.status, c.err = StatusFailed, c.describe(err)
			logger().Warn("upstream failed to start", "server", c.cfg.Name, "err", c.err)
			return
		}
		c.status, c.err, c.cs, c.tools = StatusReady, nil, cs, tools
		c.m.toolsGen.Add(1)
		go c.watch(cs)
	}()
}

func (c *conn) connect(ctx context.Context) (*mcp.ClientSession, []Tool, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "codexec", Version: c.m.opts.Version}, &mcp.ClientOptions{
		Capabilities:           &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { go c.refresh() },
	})
	t, err := c.transport()
	if err != nil {
		return nil, nil, err
	}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, err
	}
	tools, err := c.list(ctx, cs)
	if err != nil {
		_ = cs.Close()
		return nil, nil, fmt.Errorf("tools/list: %w", err)
	}
	return cs, tools, nil
}

func (c *conn) transport() (mcp.Transport, error) {
	if !c.cfg.Stdio() {
		return &mcp.StreamableClientTransport{Endpoint: c.cfg.URL, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: headerTransport{c.cfg.Headers, http.DefaultTransport}}}, nil
	}
	path, err := exec.LookPath(c.cfg.Command)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, c.cfg.Args...)
	cmd.Env = append([]string{}, c.m.opts.BaseEnv...)
	for k, v := range c.cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	tb := &tailBuffer{max: 2048}
	cmd.Stderr = tb
	c.stderr = tb
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
}

func (c *conn) list(ctx context.Context, cs *mcp.ClientSession) ([]Tool, error) {
	var out []Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		schema, _ := json.Marshal(t.InputSchema)
		title := t.Title
		if title == "" && t.Annotations != nil {
			title = t.Annotations.Title
		}
		out = append(out, Tool{Server: c.cfg.Name, Name: t.Name, Title: title, Description: t.Description,
			InputSchema: schema, Annotations: t.Annotations})
	}
	return out, nil
}

// refresh re-lists tools after a listChanged notification.
func (c *conn) refresh() {
	c.mu.Lock()
	cs := c.cs
	c.mu.Unlock()
	if cs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.m.opts.ConnectTimeout)
	defer cancel()
	tools, err := c.list(ctx, cs)
	if err != nil {
		logger().Warn("upstream tools/list after listChanged failed", "server", c.cfg.Name, "err", err)
		return
	}
	c.mu.Lock()
	if c.cs == cs {
		c.tools = tools
		c.m.toolsGen.Add(1)
	}
	c.mu.Unlock()
	logger().Info("upstream tools changed", "server", c.cfg.Name, "tools", len(tools))
}

// watch marks the server exited when its session ends.
func (c *conn) watch(cs *mcp.ClientSession) {
	_ = cs.Wait()
	_ = cs.Close() // reaps a stdio child
	c.exited(cs)
}

// exited marks cs's server exited (once; later calls for a replaced session
// do nothing), so the next use restarts it.
func (c *conn) exited(cs *mcp.ClientSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != cs {
		return
	}
	c.cs = nil
	c.status, c.err = StatusExited, c.describe(errors.New("the server exited"))
	if !c.closed {
		logger().Warn("upstream exited; restarting on next use", "server", c.cfg.Name, "err", c.err)
	}
}

// describe adds the tail of a stdio server's stderr to err.
func (c *conn) describe(err error) error {
	if c.stderr != nil {
		if s := c.stderr.String(); s != "" {
			return fmt.Errorf("%w (stderr: %s)", err, s)
		}
	}
	return err
}

func (c *conn) hasTool(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func (c *conn) toolList() []Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Tool(nil), c.tools...)
}

func (c *conn) state() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := State{Name: c.cfg.Name, Transport: "stdio", Status: c.status, Tools: len(c.tools), Restarts: c.restarts}
	if !c.cfg.Stdio() && c.cfg.URL != "" {
		s.Transport = "http"
	}
	if c.err != nil {
		s.Error = c.err.Error()
	}
	return s
}

func (c *conn) close() {
	c.mu.Lock()
	c.closed = true
	cs, ch := c.cs, c.attempt
	c.mu.Unlock()
	if ch != nil {
		<-ch
		c.mu.Lock()
		cs = c.cs
		c.mu.Unlock()
	}
	if cs != nil {
		_ = cs.Close()
	}
}

// headerTransport adds configured headers to every request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// tailBuffer keeps the last max bytes written (a server's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(trimSpace(t.b))
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
