// Package tool is what every MCP toolset of codexec is built with: the one
// registration path (Add), the one error contract
// (Coded, Invalidf, Classify; errors.go, docs/errors.md), argument decoding
// (args.go), schema helpers, the caller's
// identifiers from _meta, progress streaming, and the text renderings that
// several toolsets share (execute_code's result, JSON text).
//
// The toolset packages beside it (runtools, sessiontools, filetools,
// logtools, packagetools) register through a Registrar and never see the
// SDK server itself, so no tool can bypass Add's validation and error
// handling. Only the parent package, mcpserver, makes a Registrar and
// serves MCP.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// validJSON checks JSON text b against schema.
func validJSON(schema *jsonschema.Resolved, b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return schema.Validate(&v)
}

// Registrar adds tools, resource templates and middleware to one server.
// Register every tool before the server serves.
type Registrar struct {
	srv *mcp.Server
	// errShape is how each tool's failures look, so a refusal made before
	// the handler runs (ErrorResultFor) looks the same.
	errShape map[string]errShape
	// optional are each tool's optional arguments, which may be sent as
	// null (nullargs.go); written while tools are added, read after.
	optional map[string]map[string]bool
	// results are each tool's handler result type and output schema;
	// written while tools are added.
	results map[string]Result
	// gate runs before every handler (gate.go); nil: none.
	gate Gate
}

// Result is one tool's result as Add registered it: Out is the handler's
// result type and Schema the output schema every result is checked
// against (nil: none).
type Result struct {
	Out    reflect.Type
	Schema any
}

// Results returns, by tool name, each tool's result type and output
// schema (for the test that fills result types with random values and
// checks them against their schemas, so a mismatch fails a test rather
// than a client's call).
func (r *Registrar) Results() map[string]Result { return maps.Clone(r.results) }

// NewRegistrar returns the Registrar of srv, and adds to srv the middleware
// that lets a client send an optional argument as null (nullargs.go).
func NewRegistrar(srv *mcp.Server) *Registrar {
	r := &Registrar{srv: srv, errShape: map[string]errShape{}, optional: map[string]map[string]bool{},
		results: map[string]Result{}}
	srv.AddReceivingMiddleware(r.dropNullArgs)
	return r
}

// AddResourceTemplate adds a resource template served by h.
func (r *Registrar) AddResourceTemplate(t *mcp.ResourceTemplate, h mcp.ResourceHandler) {
	r.srv.AddResourceTemplate(t, h)
}

// AddReceivingMiddleware adds middleware that runs after the middleware
// added before it (the server's tenancy and drain come first).
func (r *Registrar) AddReceivingMiddleware(mw ...mcp.Middleware) {
	r.srv.AddReceivingMiddleware(mw...)
}

// ErrorResultFor is the isError result of err for a call of the named
// tool, in the shape its handler's errors get (docs/errors.md); for
// middleware that refuses a call before the handler runs.
func (r *Registrar) ErrorResultFor(name string, err error) *mcp.CallToolResult {
	if r == nil {
		return ErrorResult(err)
	}
	return r.errShape[name].result(Classify(err))
}

// Add registers a typed tool: every tool goes through here. Add decodes
// and validates the arguments itself (args.go) instead of leaving it to
// mcp.AddTool, so an invalid argument gets the one error shape with a
// message in plain words; the handler's result is checked against the
// output schema on every call, as the SDK's own AddTool does, and its
// error becomes the call's isError result (errors.go).
//
// Every tool returns its result as structured content, so every tool has
// an output schema: t.OutputSchema when set, else Out's (OutputSchema:
// shape only, no descriptions, required lists or additionalProperties, so
// the schemas cost tools/list as little as they can). The input schema is
// t.InputSchema when set, else InputSchema[In].
//
// Both schemas are made Portable, so no client rejects the tool. A tool
// needs a Title too (a short name for people, "Execute code"); the schema
// test fails without one.
func Add[In, Out any](r *Registrar, t *mcp.Tool, h func(context.Context, *mcp.CallToolRequest, In) (*mcp.CallToolResult, Out, error)) {
	if t.InputSchema == nil {
		t.InputSchema = InputSchema[In]()
	}
	if t.OutputSchema == nil && reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		t.OutputSchema = OutputSchema[Out]()
	}
	for _, s := range []any{t.InputSchema, t.OutputSchema} {
		if s, ok := s.(*jsonschema.Schema); ok {
			Portable(s)
		}
	}
	r.noteOptional(t.Name, t.InputSchema)
	in := mustResolve(t.Name, t.InputSchema)
	var outSchema *jsonschema.Resolved
	if t.OutputSchema != nil {
		outSchema = mustResolve(t.Name, t.OutputSchema)
	}
	var zero Out
	shaper, _ := any(zero).(FailureShaper)
	es := errShape{shaper: shaper, schema: outSchema}
	r.errShape[t.Name] = es
	r.results[t.Name] = Result{Out: reflect.TypeFor[Out](), Schema: t.OutputSchema}
	r.srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args In
		if err := decodeArgs(req.Params.Arguments, in, &args); err != nil {
			return es.result(Classify(err)), nil
		}
		if res, done := r.passGate(ctx, req, es); done {
			return res, nil
		}
		res, out, err := h(ctx, req, args)
		if err != nil {
			return es.result(Classify(err)), nil
		}
		return success(res, out, outSchema), nil
	})
}

// success completes a handler's result as mcp.AddTool would: out as the
// structured content, checked against schema (nil: not checked), and as
// the text when the handler set no content.
func success(res *mcp.CallToolResult, out any, schema *jsonschema.Resolved) *mcp.CallToolResult {
	if res == nil {
		res = &mcp.CallToolResult{}
	}
	if out == nil {
		return res
	}
	b, err := json.Marshal(out)
	if err != nil {
		return ErrorResult(fmt.Errorf("marshal the result: %w", err))
	}
	if schema != nil {
		if err := validJSON(schema, b); err != nil {
			return ErrorResult(fmt.Errorf("the result does not match the output schema: %w", err))
		}
	}
	res.StructuredContent = json.RawMessage(b)
	if res.Content == nil {
		res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
	}
	return res
}

// mustResolve resolves a tool's schema; it panics on a schema that does not
// resolve, a programming error the schema snapshot test catches.
func mustResolve(name string, schema any) *jsonschema.Resolved {
	s, ok := schema.(*jsonschema.Schema)
	if !ok {
		s = new(jsonschema.Schema)
		b, err := json.Marshal(schema)
		if err == nil {
			err = json.Unmarshal(b, s)
		}
		if err != nil {
			panic(fmt.Sprintf("tool %q: schema: %v", name, err))
		}
	}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("tool %q: schema: %v", name, err))
	}
	return rs
}

// Ptr returns a pointer to v (for the annotations' optional hints).
func Ptr[T any](v T) *T { return &v }

// EmptyIn is the input of tools without parameters.
type EmptyIn struct{}
