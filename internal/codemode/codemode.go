// Package codemode implements "code mode": TypeScript (or Python) that runs as
// the body of an async function with an injected `context` (each of its
// identifier-safe keys also bound as a variable), whose `return` value is the
// result, whose console output is collected as logs, and whose outcome is
// summarised in metrics.
//
// The package builds the wrapper programs (TypeScript, and Python in wrapper
// form too), the bindings of upstream MCP tools, and the channel over which a
// running program calls those tools and finally reports its outcome: one
// JSON envelope sent as a "done" notification frame (output streams are
// truncated for display, a result must not be; and the workspace may not be
// writable, as in docker mode), and the run loop (Execute) that hands the
// wrapped program to the engine's run path with the channel attached.
package codemode

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/errcode"
)

// Metrics are a code-mode execution's metrics (part of engine.Result).
type Metrics = engine.CodeModeMetrics

// Error is a code-mode execution's error object: type is SyntaxError,
// RuntimeError or TimeoutError (part of engine.Result).
type Error = engine.CodeModeError

// Envelope is what the wrapper reports.
type Envelope struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Logs   []string        `json:"logs"`
	Error  *Error          `json:"error"`
}

// LineOffset is how many wrapper lines precede the user's code.
const LineOffset = 1

var identRe = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// reserved words and names the wrapper itself uses may not be bound.
var reserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`break case catch class const continue debugger default delete do else enum export extends
		false finally for function if import in instanceof new null return super switch this throw true try typeof var void
		while with yield let static implements interface package private protected public await arguments eval undefined
		context console require module exports process globalThis callTool`) {
		reserved[w] = true
	}
}

// Bindings lists the context keys bound as variables, sorted.
func Bindings(ctx map[string]any) []string {
	var out []string
	for k := range ctx {
		if identRe.MatchString(k) && !reserved[k] && !strings.HasPrefix(k, "__cx") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// WrapOptions configure a wrapped program. The program always reports its
// envelope over the channel; with tools it also reads responses on stdin.
type WrapOptions struct {
	Tools []Tool
	// Mark prefixes the program's frames on stdout (see channel.go).
	Mark string
}

// contextJSON encodes the injected context (nil is the empty object), the
// same for both languages' wrappers.
func contextJSON(ctx map[string]any) ([]byte, error) {
	if ctx == nil {
		ctx = map[string]any{}
	}
	b, err := json.Marshal(ctx)
	if err != nil {
		return nil, errcode.New(errcode.InvalidParams, "context is not JSON-serializable: %w", err)
	}
	return b, nil
}

// Wrap returns the TypeScript program for code with ctx injected; the
// envelope is sent as a "done" frame. The user's code starts on line
// LineOffset+1. Each injected server is bound to a variable (tools win
// over context keys of the same name when a call mixes both).
func Wrap(code string, ctx map[string]any, opts WrapOptions) (string, error) {
	ctxJSON, err := contextJSON(ctx)
	if err != nil {
		return "", err
	}
	servers := Group(opts.Tools)
	lit, _ := json.Marshal(string(ctxJSON))
	mark, _ := json.Marshal(opts.Mark)
	var b strings.Builder
	b.WriteString(`const __cxUtil = require("util"), __cxMark = ` + string(mark) + `; ` + channelVars)
	b.WriteString(`const __cxLogs: string[] = []; for (const m of ["log", "info", "warn", "error", "debug", "trace"]) (console as any)[m] = (...a: any[]) => { __cxLogs.push(__cxUtil.format(...a)); }; `)
	b.WriteString(`const context: any = JSON.parse(` + string(lit) + `); `)
	if keys := bindable(ctx, servers); len(keys) > 0 {
		b.WriteString(`const { ` + strings.Join(keys, ", ") + ` } = context; `)
	}
	if len(servers) > 0 {
		b.WriteString(`__cxOpen(); `)
		for _, s := range servers {
			b.WriteString(`const ` + s.Ident + ` = __cxServer(` + jsonString(s.Name) + `, ` + aliasJSON(s) + `); `)
		}
	}
	b.WriteString(`(async () => {` + "\n")
	b.WriteString(code)
	b.WriteString("\n})().then((r: any) => __cxDone({ ok: true, result: r === undefined ? null : r }), (e: any) => __cxDone({ ok: false, error: { type: \"RuntimeError\", name: e && e.name, message: String(e && e.message !== undefined ? e.message : e), stack: e && e.stack } }));\n")
	b.WriteString(doneFn)
	b.WriteString(channelJS)
	return b.String(), nil
}

// bindable are the context keys bound as variables: Bindings minus the
// names injected servers take.
func bindable(ctx map[string]any, servers []Server) []string {
	taken := map[string]bool{"callTool": true}
	for _, s := range servers {
		taken[s.Ident] = true
	}
	var out []string
	for _, k := range Bindings(ctx) {
		if !taken[k] {
			out = append(out, k)
		}
	}
	return out
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// aliasJSON maps each tool name of s to its aliases.
func aliasJSON(s Server) string {
	m := map[string][]string{}
	for _, t := range s.Tools {
		m[t.Name] = append([]string{}, s.Aliases[t.Name]...)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

const doneFn = `function __cxJSON(v: any): string {
  return JSON.stringify(v, function (k: string, x: any) {
    if (typeof x === "bigint") return x.toString();
    const where = k === "" || k === "result" ? "the returned value" : "property " + JSON.stringify(k);
    if (typeof x === "function" || typeof x === "symbol") throw new TypeError(where + " is a " + typeof x);
    if (x instanceof Map || x instanceof Set) throw new TypeError(where + " is a " + x.constructor.name + " (convert it with Object.fromEntries or Array.from)");
    return x;
  });
}
function __cxDone(env: any) {
  env.logs = __cxLogs;
  let s: string;
  try { s = __cxJSON(env); }
  catch (e: any) { s = JSON.stringify({ ok: false, logs: __cxLogs, error: { type: "RuntimeError", name: "SerializationError", message: "result is not JSON-serializable: " + e.message } }); }
  process.stdout.write(__cxMark + '{"id":0,"op":"done","params":' + s + "}\n");
  __cxClose();
}
`

// channelJS is the program's end of the channel (see channel.go): frames to
// stdout after the mark, frames from stdin one per line.
// channelVars go on the first line: the code may call tools before the
// rest of the wrapper below it has run, so state must exist already.
const channelVars = `let __cxNext = 0, __cxBuf = ""; const __cxWait = new Map<number, any>(); const __cxPlain = new Set(["then", "toJSON", "constructor", "inspect", "valueOf", "toString", "asymmetricMatch", "nodeType"]); `

const channelJS = `function __cxSend(f: any) { process.stdout.write(__cxMark + JSON.stringify(f) + "\n"); }
function __cxOpen() {
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (d: string) => {
    __cxBuf += d;
    let i: number;
    while ((i = __cxBuf.indexOf("\n")) >= 0) { const line = __cxBuf.slice(0, i); __cxBuf = __cxBuf.slice(i + 1); __cxFrame(JSON.parse(line)); }
  });
  process.stdin.on("end", () => { for (const [, w] of __cxWait) w.fail("codexec closed the tool channel"); __cxWait.clear(); });
}
function __cxClose() { process.stdin.destroy(); }
function __cxFrame(f: any) {
  if (f.re) { const w = __cxWait.get(f.id); if (w) { __cxWait.delete(f.id); if (f.ok) w.resolve(f.result); else w.fail(f.error); } return; }
  if (f.op === "ping") __cxSend({ id: f.id, re: true, ok: true, result: { pong: true, pending: __cxWait.size } });
  else __cxSend({ id: f.id, re: true, ok: false, error: "unknown request " + f.op });
}
function callTool(server: string, tool: string, args?: any): Promise<any> {
  const err = new Error(server + "." + tool);
  err.name = "ToolError";
  return new Promise((resolve, reject) => {
    const id = ++__cxNext;
    const fail = (msg: string) => { err.message = msg; if (err.stack) err.stack = "ToolError: " + msg + err.stack.slice(err.stack.indexOf("\n")); reject(err); };
    __cxWait.set(id, { resolve, fail });
    __cxSend({ id, op: "call", params: { server, tool, args: args === undefined ? {} : args } });
  });
}
// __cxServer binds a server's injected tools; any other name still becomes
// a call, so codexec can say why it is unavailable (policy, not injected).
function __cxServer(server: string, tools: Record<string, string[]>) {
  const o: any = {};
  for (const [name, aliases] of Object.entries(tools)) {
    const f = (args?: any) => callTool(server, name, args);
    o[name] = f;
    for (const a of aliases) o[a] = f;
  }
  return new Proxy(Object.freeze(o), { get: (t: any, p: any) => p in t || typeof p !== "string" || __cxPlain.has(p) ? t[p] : (args?: any) => callTool(server, p, args) });
}
`

// Decode parses an envelope.
func Decode(data []byte) (Envelope, error) {
	var env Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return Envelope{}, fmt.Errorf("code mode result is unreadable: %w", err)
	}
	if env.Logs == nil {
		env.Logs = []string{}
	}
	return env, nil
}
