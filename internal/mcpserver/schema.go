package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SurfaceBudget is the most characters the default tools/list may cost (the
// compact JSON of its tools array): every conversation pays it. The schema
// test fails beyond it.
const SurfaceBudget = 12000

// addTool registers a typed tool: every tool goes through here, and so
// through mcp.AddTool, which validates the arguments against the input
// schema and the result against the output schema. Its output schema is
// t.OutputSchema when set (build it with outputSchema) and absent
// otherwise: the structured result is still returned, but only results an
// agent must interpret field by field (execute_code's) pay for a schema in
// every tools/list; the others are small self-describing JSON objects, and
// tools that return execute_code's shape say so instead of repeating it.
//
// The input schema is t.InputSchema when set, else In's with
// additionalProperties dropped: unknown arguments are ignored, as
// TypeScript MCP servers (zod objects) do, instead of every tool paying for
// "additionalProperties": false.
//
// A handler's error becomes the call's isError result (errors.go).
func addTool[In, Out any](s *Server, t *mcp.Tool, h func(context.Context, *mcp.CallToolRequest, In) (*mcp.CallToolResult, Out, error)) {
	if t.InputSchema == nil {
		t.InputSchema = schemaOf[In](func(s *jsonschema.Schema) { s.AdditionalProperties = nil })
	}
	run := func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		res, out, err := h(ctx, req, in)
		if err != nil && setupError(err, &out) {
			return errorResult(err), out, nil
		}
		return res, out, err
	}
	if t.OutputSchema != nil {
		mcp.AddTool(s.mcp, t, run)
		return
	}
	// Out erased to any: the SDK infers no output schema for it.
	mcp.AddTool(s.mcp, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		res, out, err := run(ctx, req, in)
		return res, out, err
	})
}

// outputSchema is T's JSON schema reduced to shape (see shapeOnly).
func outputSchema[T any]() *jsonschema.Schema { return schemaOf[T](shapeOnly) }

// schemaOf is T's JSON schema with strip applied to every (sub)schema.
func schemaOf[T any](strip func(*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %T: %v", *new(T), err)) // a programming error, caught by the schema test
	}
	walk(s, strip)
	return s
}

func walk(s *jsonschema.Schema, f func(*jsonschema.Schema)) {
	if s == nil {
		return
	}
	f(s)
	for _, p := range s.Properties {
		walk(p, f)
	}
	walk(s.Items, f)
}

// shapeOnly strips what an agent does not need from an output schema:
// descriptions (meaning belongs in the tool or input descriptions, said once),
// required lists and additionalProperties. Types, nesting and nullability stay,
// and the SDK still validates every result against what remains.
//
// A schema left with nothing (a Go `any` field) would encode as the boolean
// schema `true`, which is valid JSON Schema but refused by clients that
// require every property schema to be an object (the TypeScript SDK, the MCP
// conformance runner); such a schema keeps its description.
func shapeOnly(s *jsonschema.Schema) {
	desc := s.Description
	s.Description, s.Required, s.AdditionalProperties = "", nil, nil
	if b, err := json.Marshal(s); err == nil && string(b) == "true" {
		s.Description = desc
	}
}
