// Package codemode implements seed 004's "code mode": TypeScript that runs as
// the body of an async function with an injected `context` (each of its
// identifier-safe keys also bound as a variable), whose `return` value is the
// result, whose console output is collected as logs, and whose outcome is
// summarised in metrics.
//
// The package only builds the wrapper program and decodes what it reports;
// the engine runs it like any other node program under the sandbox. The
// wrapper writes one JSON envelope to a file in the working directory (output
// streams are truncated for display, a result must not be), which the engine
// reads and deletes before computing artifacts.
package codemode

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ResultFilePrefix starts the name of the envelope file in the workspace.
const ResultFilePrefix = ".codexec-result-"

// MaxResultBytes bounds the envelope the engine will read.
const MaxResultBytes = 16 << 20

// Metrics are seed 004's execution metrics.
type Metrics struct {
	ExecutionTimeMs float64 `json:"executionTimeMs" jsonschema:"wall time of the execution in milliseconds"`
	InputSizeBytes  int     `json:"inputSizeBytes" jsonschema:"size of the code in bytes"`
	OutputSizeBytes int     `json:"outputSizeBytes" jsonschema:"size of the JSON-serialized result in bytes"`
}

// Error is seed 004's error object: type is SyntaxError, RuntimeError or
// TimeoutError.
type Error struct {
	Type    string `json:"type" jsonschema:"SyntaxError | RuntimeError | TimeoutError"`
	Name    string `json:"name,omitempty" jsonschema:"JavaScript error class for runtime errors (TypeError, …)"`
	Message string `json:"message"`
	Line    int    `json:"line,omitempty" jsonschema:"1-based line in the submitted code (syntax errors)"`
	Column  int    `json:"column,omitempty" jsonschema:"1-based column in the submitted code (syntax errors)"`
	Stack   string `json:"stack,omitempty"`
}

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
		context console require module exports process globalThis`) {
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

// Wrap returns the TypeScript program for code with ctx injected; the
// envelope is written to resultFile (a name relative to the working
// directory). The user's code starts on line LineOffset+1.
func Wrap(code string, ctx map[string]any, resultFile string) (string, error) {
	if ctx == nil {
		ctx = map[string]any{}
	}
	ctxJSON, err := json.Marshal(ctx)
	if err != nil {
		return "", fmt.Errorf("context is not JSON-serializable: %w", err)
	}
	lit, _ := json.Marshal(string(ctxJSON))
	file, _ := json.Marshal(resultFile)
	var b strings.Builder
	b.WriteString(`const __cxFs = require("fs"), __cxUtil = require("util"), __cxOut = require("path").resolve(` + string(file) + `); `)
	b.WriteString(`const __cxLogs: string[] = []; for (const m of ["log", "info", "warn", "error", "debug", "trace"]) (console as any)[m] = (...a: any[]) => { __cxLogs.push(__cxUtil.format(...a)); }; `)
	b.WriteString(`const context: any = JSON.parse(` + string(lit) + `); `)
	if keys := Bindings(ctx); len(keys) > 0 {
		b.WriteString(`const { ` + strings.Join(keys, ", ") + ` } = context; `)
	}
	b.WriteString(`(async () => {` + "\n")
	b.WriteString(code)
	b.WriteString("\n})().then((r: any) => __cxDone({ ok: true, result: r === undefined ? null : r }), (e: any) => __cxDone({ ok: false, error: { type: \"RuntimeError\", name: e && e.name, message: String(e && e.message !== undefined ? e.message : e), stack: e && e.stack } }));\n")
	b.WriteString(doneFn)
	return b.String(), nil
}

const doneFn = `function __cxDone(env: any) {
  env.logs = __cxLogs;
  let s: string;
  try { s = JSON.stringify(env, (_k, v) => typeof v === "bigint" ? v.toString() : v); }
  catch (e: any) { s = JSON.stringify({ ok: false, logs: __cxLogs, error: { type: "RuntimeError", name: "SerializationError", message: "result is not JSON-serializable: " + e.message } }); }
  __cxFs.writeFileSync(__cxOut, s);
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
