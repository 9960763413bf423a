package tool

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// OutputSchema is T's JSON schema reduced to shape (see shapeOnly), for
// the mcp.Tool given to Add.
func OutputSchema[T any]() *jsonschema.Schema { return SchemaOf[T](shapeOnly) }

// SchemaOf is T's JSON schema with strip applied to every (sub)schema. It
// panics when T has no schema: a programming error, which the schema
// snapshot test catches.
func SchemaOf[T any](strip func(*jsonschema.Schema)) *jsonschema.Schema {
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
