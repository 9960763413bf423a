package refdocs

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// field is one row of an arguments or result table.
type field struct {
	name, typ, desc string
	required        bool
}

// schema is the part of a JSON Schema the tables show. Type is a string or
// a list of strings; nullable values may also come as anyOf/oneOf with a
// {"type": "null"} branch.
type schema struct {
	Type        any                `json:"type"`
	Description string             `json:"description"`
	Title       string             `json:"title"`
	Enum        []any              `json:"enum"`
	Const       any                `json:"const"`
	Properties  map[string]*schema `json:"properties"`
	Required    []string           `json:"required"`
	Items       *schema            `json:"items"`
	AnyOf       []*schema          `json:"anyOf"`
	OneOf       []*schema          `json:"oneOf"`
	Format      string             `json:"format"`
}

// fields flattens a tool schema (whatever Go value the SDK holds it in)
// into rows: top-level properties, then the properties of nested objects
// as parent.child (parent[].child inside arrays).
func fields(v any) ([]field, error) {
	if v == nil {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var s schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema object: %w", err)
	}
	var out []field
	flatten(&s, "", &out)
	return out, nil
}

func flatten(s *schema, prefix string, out *[]field) {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := s.Properties[n]
		desc := p.Description
		if desc == "" {
			desc = p.Title
		}
		*out = append(*out, field{name: prefix + n, typ: typeOf(p), desc: desc, required: slices.Contains(s.Required, n)})
		if obj := objectOf(p); obj != nil {
			flatten(obj, prefix+n+".", out)
		} else if it := arrayItems(p); it != nil {
			if obj := objectOf(it); obj != nil {
				flatten(obj, prefix+n+"[].", out)
			}
		}
	}
}

// typeOf names a schema's type in plain words: "string", "integer or
// null", "array of string", "one of: a, b", "any" when it says nothing.
func typeOf(s *schema) string {
	if s == nil {
		return "any"
	}
	if len(s.Enum) > 0 {
		return "one of: " + joinValues(s.Enum)
	}
	if s.Const != nil {
		return "always " + joinValues([]any{s.Const})
	}
	var kinds []string
	nullable := false
	for _, t := range typeNames(s.Type) {
		if t == "null" {
			nullable = true
			continue
		}
		kinds = append(kinds, describeKind(t, s))
	}
	for _, alt := range append(append([]*schema(nil), s.AnyOf...), s.OneOf...) {
		if names := typeNames(alt.Type); len(names) == 1 && names[0] == "null" {
			nullable = true
			continue
		}
		kinds = append(kinds, typeOf(alt))
	}
	if len(kinds) == 0 {
		kinds = []string{"any"}
	}
	out := strings.Join(kinds, " or ")
	if nullable {
		out += " or null"
	}
	return out
}

func describeKind(t string, s *schema) string {
	switch {
	case t == "array" && s.Items != nil:
		return "array of " + typeOf(s.Items)
	case t == "string" && s.Format != "":
		return "string (" + s.Format + ")"
	}
	return t
}

// typeNames reads "type" as written: one name or a list of names.
func typeNames(t any) []string {
	switch v := t.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// objectOf returns s, or its one non-null anyOf/oneOf branch, when that has
// properties to list.
func objectOf(s *schema) *schema {
	if s == nil {
		return nil
	}
	if len(s.Properties) > 0 {
		return s
	}
	for _, alt := range append(append([]*schema(nil), s.AnyOf...), s.OneOf...) {
		if len(alt.Properties) > 0 {
			return alt
		}
	}
	return nil
}

// arrayItems returns the items schema of an array (also one written as a
// nullable anyOf branch).
func arrayItems(s *schema) *schema {
	if s.Items != nil {
		return s.Items
	}
	for _, alt := range append(append([]*schema(nil), s.AnyOf...), s.OneOf...) {
		if alt.Items != nil {
			return alt.Items
		}
	}
	return nil
}

func joinValues(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		b, _ := json.Marshal(v)
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}
