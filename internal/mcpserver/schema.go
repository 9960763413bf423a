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

// addTool registers a typed tool. Its output schema is t.OutputSchema when
// set (build it with outputSchema) and absent otherwise: the structured
// result is still returned, but only results an agent must interpret field by
// field (execute_code's, execute_command's) pay for a schema in every
// tools/list; the others are small self-describing JSON objects, and tools
// that return execute_code's shape say so instead of repeating it.
//
// The input schema is In's with additionalProperties dropped: unknown
// arguments are ignored, as the seeds' reference implementation (zod objects)
// does, instead of every tool paying for "additionalProperties": false.
// Registration goes through registerTyped (typedtool.go), mcp.AddTool's
// contract without its per-call cost.
func addTool[In, Out any](s *Server, t *mcp.Tool, h func(context.Context, *mcp.CallToolRequest, In) (*mcp.CallToolResult, Out, error)) {
	if t.InputSchema == nil {
		t.InputSchema = schemaOf[In](func(s *jsonschema.Schema) { s.AdditionalProperties = nil })
	}
	if t.OutputSchema != nil {
		registerTyped(s.mcp, t, h)
		return
	}
	registerTyped(s.mcp, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		res, out, err := h(ctx, req, in)
		if err != nil {
			return res, nil, err
		}
		return res, out, nil
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
