package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/execlog"
)

// Caller calls upstream tools; upstream.Manager implements it. It owns
// what holds for every call whoever makes it: the tool policy, the
// per-call timeout and the result cap (CODEXEC_TOOL_POLICY,
// CODEXEC_CODEMODE_CALL_TIMEOUT_MS, CODEXEC_CODEMODE_MAX_RESULT).
type Caller interface {
	// Call calls server.tool with args (a JSON object) and returns its
	// result as JSON, or why the call was refused or failed.
	Call(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error)
	// Allowed reports whether the tool policy lets code call server.tool
	// (nil) or why not.
	Allowed(server, tool string) error
}

// BridgeOptions limit what one execution may do. Zero values select the
// defaults.
type BridgeOptions struct {
	// MaxCalls is the per-execution call budget (default 100).
	MaxCalls int
}

// Bridge answers the program's "call" requests: it checks that the tool was
// injected into this execution, enforces the execution's call budget, calls
// the Caller (which applies the policy, timeout and result cap of every
// upstream call), and records every call for the execution log.
type Bridge struct {
	caller  Caller
	opts    BridgeOptions
	allowed map[string]bool
	names   []string

	mu    sync.Mutex
	count int
	calls []execlog.ToolCall
}

// NewBridge returns a bridge for the injected tools.
func NewBridge(caller Caller, tools []Tool, opts BridgeOptions) *Bridge {
	if opts.MaxCalls <= 0 {
		opts.MaxCalls = 100
	}
	b := &Bridge{caller: caller, opts: opts, allowed: map[string]bool{}}
	for _, t := range tools {
		b.allowed[t.FullName()] = true
		b.names = append(b.names, t.FullName())
	}
	sort.Strings(b.names)
	return b
}

type callParams struct {
	Server string          `json:"server"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
}

// Handle is the channel Handler.
func (b *Bridge) Handle(ctx context.Context, op string, params json.RawMessage) (json.RawMessage, error) {
	if op != "call" {
		return nil, fmt.Errorf("unknown request %q", op)
	}
	var p callParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("bad call request: %v", err)
	}
	start := time.Now()
	res, err := b.call(ctx, p)
	rec := execlog.ToolCall{Server: p.Server, Tool: p.Tool, ArgBytes: len(p.Args), ResultBytes: len(res),
		DurationMs: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		rec.Error = err.Error()
	}
	b.mu.Lock()
	b.calls = append(b.calls, rec)
	b.mu.Unlock()
	return res, err
}

func (b *Bridge) call(ctx context.Context, p callParams) (json.RawMessage, error) {
	full := p.Server + "." + p.Tool
	if !b.allowed[full] {
		// The policy's reason, if it forbids the tool, says more than
		// "not injected".
		if err := b.caller.Allowed(p.Server, p.Tool); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("tool %s is not available to this execution (injected: %s); name it in tools or describe it in intent", full, b.injected())
	}
	b.mu.Lock()
	b.count++
	over := b.count > b.opts.MaxCalls
	b.mu.Unlock()
	if over {
		return nil, fmt.Errorf("call budget of %d tool calls per execution exhausted (CODEXEC_CODEMODE_MAX_CALLS)", b.opts.MaxCalls)
	}
	if len(p.Args) == 0 || string(p.Args) == "null" {
		p.Args = json.RawMessage("{}")
	} else if p.Args[0] != '{' {
		return nil, fmt.Errorf("%s: arguments must be an object", full)
	}
	return b.caller.Call(ctx, p.Server, p.Tool, p.Args)
}

func (b *Bridge) injected() string {
	if len(b.names) == 0 {
		return "none"
	}
	return strings.Join(b.names, ", ")
}

// Calls returns the calls made so far, in completion order.
func (b *Bridge) Calls() []execlog.ToolCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]execlog.ToolCall(nil), b.calls...)
}
