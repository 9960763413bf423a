package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// registerTyped registers a typed tool the way mcp.AddTool does (the same
// In/Out structs and schemas; arguments validated against the input schema
// with its defaults applied, decoded with exact field-name matching; the
// result validated against the output schema and sent once as structured
// content, plus as text when the handler gave none; a handler error is a
// tool error, a *jsonrpc.Error a protocol error), but with encoding/json
// and schemas resolved once here. The SDK's generic path decodes each
// call's arguments and result through a decoder that allocates 32 KiB per
// use, three or four times a call; see BenchmarkToolGlue.
//
// t.InputSchema must be set (a *jsonschema.Schema); t.OutputSchema may be.
// It panics on a schema that does not resolve, a programming error.
func registerTyped[In, Out any](srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	in := mustResolve(t.InputSchema)
	var out *jsonschema.Resolved
	if t.OutputSchema != nil {
		out = mustResolve(t.OutputSchema)
	}
	dec := argDecoder{in: in, exact: exactFields(in.Schema()), defaults: hasDefaults(in.Schema())}
	srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args In
		if err := dec.decode(req.Params.Arguments, &args); err != nil {
			var res mcp.CallToolResult
			res.SetError(err)
			return &res, nil
		}
		res, val, err := h(ctx, req, args)
		if err != nil {
			if wire, ok := err.(*jsonrpc.Error); ok {
				return nil, wire
			}
			var res mcp.CallToolResult
			res.SetError(err)
			return &res, nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		var v any = val
		if v == nil || res.InputRequests != nil {
			return res, nil
		}
		return res, setStructured(res, v, out)
	})
}

func mustResolve(s any) *jsonschema.Resolved {
	js, ok := s.(*jsonschema.Schema)
	if !ok {
		panic(fmt.Sprintf("tool schema is %T, want *jsonschema.Schema", s))
	}
	r, err := js.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("tool schema: %v", err))
	}
	return r
}

// exactFields maps each lower-cased property name of an object schema to
// its exact spelling: encoding/json matches field names case-insensitively,
// the SDK does not, so keys that only differ in case are dropped first.
func exactFields(s *jsonschema.Schema) map[string]string {
	m := make(map[string]string, len(s.Properties))
	for name := range s.Properties {
		m[strings.ToLower(name)] = name
	}
	return m
}

// argDecoder validates and decodes one tool's arguments.
type argDecoder struct {
	in *jsonschema.Resolved
	// exact maps lower-cased property names to their spelling (exactFields).
	exact map[string]string
	// defaults: the schema has defaults to apply (then the arguments are
	// decoded from the validated, completed value, else from raw).
	defaults bool
}

// decode validates raw arguments (absent: {}) against the schema, applying
// its defaults, and decodes them into dst.
func (d argDecoder) decode(raw json.RawMessage, dst any) error {
	m := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("validating \"arguments\": unmarshaling arguments: %w", err)
		}
		if m == nil {
			m = map[string]any{}
		}
	}
	rewrite := d.defaults || len(raw) == 0
	for k := range m {
		if name, ok := d.exact[strings.ToLower(k)]; ok && name != k {
			delete(m, k)
			rewrite = true
		}
	}
	var v any = m
	if err := d.in.ApplyDefaults(&v); err != nil {
		return fmt.Errorf("validating \"arguments\": applying schema defaults:\n%w", err)
	}
	if err := d.in.Validate(&v); err != nil {
		return fmt.Errorf("validating \"arguments\": %v", err)
	}
	if rewrite {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		raw = b
	}
	return json.Unmarshal(raw, dst)
}

// hasDefaults reports whether s or a property below it has a default.
func hasDefaults(s *jsonschema.Schema) bool {
	if s == nil {
		return false
	}
	if s.Default != nil {
		return true
	}
	for _, p := range s.Properties {
		if hasDefaults(p) {
			return true
		}
	}
	return hasDefaults(s.Items)
}

// setStructured puts v, validated against out (if set), into res once as
// structured content, and as text when res has no content of its own (or
// next to it when v is not an object).
func setStructured(res *mcp.CallToolResult, v any, out *jsonschema.Resolved) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("marshaling output: %w", err)
	}
	if out != nil {
		var check any
		if err := json.Unmarshal(b, &check); err != nil {
			return fmt.Errorf("validating tool output: %w", err)
		}
		if err := out.Validate(&check); err != nil {
			return fmt.Errorf("validating tool output: %w", err)
		}
	}
	res.StructuredContent = json.RawMessage(b)
	if res.Content == nil {
		res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
	} else if len(b) == 0 || b[0] != '{' {
		res.Content = append(res.Content, &mcp.TextContent{Text: string(b)})
	}
	return nil
}
