package tool

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// OutputSchema is T's JSON schema reduced to shape (see shapeOnly) and made
// portable (see Portable), for the mcp.Tool given to Add. Add builds it
// from the handler's result type when the tool sets none.
func OutputSchema[T any]() *jsonschema.Schema {
	s := SchemaOf[T](func(*jsonschema.Schema) {})
	Portable(s)
	walk(s, shapeOnly)
	return s
}

// InputSchema is T's JSON schema as Add makes it for a tool's input: with
// additionalProperties dropped, so unknown arguments are ignored, as
// TypeScript MCP servers (zod objects) do, instead of every tool paying for
// "additionalProperties": false. Build it to refine it (an enum) before
// passing it as the tool's InputSchema.
func InputSchema[T any]() *jsonschema.Schema {
	return SchemaOf[T](func(s *jsonschema.Schema) { s.AdditionalProperties = nil })
}

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

// walk applies f to s and every schema below it.
func walk(s *jsonschema.Schema, f func(*jsonschema.Schema)) {
	if s == nil {
		return
	}
	f(s)
	for _, p := range s.Properties {
		walk(p, f)
	}
	walk(s.Items, f)
	for _, b := range s.AnyOf {
		walk(b, f)
	}
}

// Portable rewrites s, in place, into the part of JSON Schema that every
// MCP client reads the same way (the rules of MCP Inspector's schema
// portability check, which TestToolSchemasPortable applies to every tool):
//
//   - "type" is one string, never an array: several clients read it as a
//     string and reject the tool or drop the constraint. The inference
//     writes a pointer or slice as ["null", X]; a property that may be
//     absent (not in required) becomes plain X, since omitempty leaves it
//     out instead of writing null, and an input may omit it (or still send
//     null: nullargs.go); any other nullable schema becomes
//     anyOf [X, {"type":"null"}].
//   - every schema has a type: a Go `any` (an empty schema, which encodes
//     as the boolean schema true) becomes anyOf of the JSON types.
//   - every object schema has "properties", empty for free-form objects.
func Portable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		if !slices.Contains(s.Required, name) {
			dropNull(p)
		}
		portableNode(p)
	}
	portableNode(s.Items)
	objectProperties(s)
}

// portableNode makes one subschema portable, then everything below it.
func portableNode(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	switch {
	case len(s.Types) > 1:
		branches := make([]*jsonschema.Schema, 0, len(s.Types))
		for _, t := range s.Types {
			if t == "null" {
				continue
			}
			b := *s
			b.Types, b.Type, b.Description = nil, t, ""
			Portable(&b)
			branches = append(branches, &b)
		}
		*s = jsonschema.Schema{Description: s.Description, AnyOf: append(branches, &jsonschema.Schema{Type: "null"})}
		return
	case isEmpty(s):
		s.AnyOf = anyJSON()
		return
	}
	Portable(s)
}

// dropNull turns ["null", X] into X.
func dropNull(s *jsonschema.Schema) {
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		i := slices.Index(s.Types, "null")
		s.Type, s.Types = s.Types[1-i], nil
	}
}

// objectProperties gives an object schema without properties an empty
// properties map.
func objectProperties(s *jsonschema.Schema) {
	if s.Type == "object" && s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
}

// isEmpty reports whether s constrains nothing but its description (a Go
// `any`).
func isEmpty(s *jsonschema.Schema) bool {
	c := *s
	c.Description = ""
	return reflect.ValueOf(c).IsZero()
}

// anyJSON is the schema of any JSON value, spelled with a type on every
// branch.
func anyJSON() []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, t := range []string{"string", "number", "boolean", "object", "array", "null"} {
		b := &jsonschema.Schema{Type: t}
		objectProperties(b)
		out = append(out, b)
	}
	return out
}

// shapeOnly strips what an agent does not need from an output schema:
// descriptions (meaning belongs in the tool or input descriptions, said
// once), required lists and additionalProperties. Types, nesting and
// nullability stay, and the SDK still validates every result against what
// remains.
func shapeOnly(s *jsonschema.Schema) {
	s.Description, s.Required, s.AdditionalProperties = "", nil, nil
}
