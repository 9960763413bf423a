// Package tool is what every MCP toolset of codexec is built with: the one
// registration path (Add, through mcp.AddTool), the one tool-error style
// (Coded, Refused, Invalid; errors.go), schema helpers, the caller's
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
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Registrar adds tools, resource templates and middleware to one server.
// Register every tool before the server serves.
type Registrar struct {
	srv *mcp.Server
	// optional are each tool's optional arguments, which may be sent as
	// null (nullargs.go); written while tools are added, read after.
	optional map[string]map[string]bool
}

// NewRegistrar returns the Registrar of srv, and adds to srv the middleware
// that lets a client send an optional argument as null (nullargs.go).
func NewRegistrar(srv *mcp.Server) *Registrar {
	r := &Registrar{srv: srv, optional: map[string]map[string]bool{}}
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

// Add registers a typed tool: every tool goes through here, and so
// through mcp.AddTool, which validates the arguments against the input
// schema and the result against the output schema. Every tool returns its
// result as structured content, so every tool has an output schema:
// t.OutputSchema when set, else Out's (OutputSchema: shape only, no
// descriptions, required lists or additionalProperties, so the schemas cost
// tools/list as little as they can).
//
// The input schema is t.InputSchema when set, else InputSchema[In].
//
// Both schemas are made Portable, so no client rejects the tool. A tool
// needs a Title too (a short name for people, "Execute code"); the schema
// test fails without one.
//
// A handler's error becomes the call's isError result (errors.go).
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
	mcp.AddTool(r.srv, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		res, out, err := h(ctx, req, in)
		if err != nil && setupError(err, &out) {
			return ErrorResult(err), out, nil
		}
		return res, out, err
	})
}

// Ptr returns a pointer to v (for the annotations' optional hints).
func Ptr[T any](v T) *T { return &v }

// EmptyIn is the input of tools without parameters.
type EmptyIn struct{}
