package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Optional arguments sent as null.
//
// An input schema types an optional argument as X, not ["null", X] (see
// Portable), yet some clients send null for every optional argument they
// leave out (OpenAI's strict function calling makes every property required
// and has the model fill the unused ones with null). The registrar's
// middleware drops an optional argument whose value is null before the SDK
// validates the call, so null means omitted, as it did when the schemas
// allowed null. A required argument sent as null is still refused.

// noteOptional records the optional arguments of tool name's input schema.
func (r *Registrar) noteOptional(name string, schema any) {
	s, ok := schema.(*jsonschema.Schema)
	if !ok || len(s.Properties) == 0 {
		return
	}
	optional := map[string]bool{}
	for p := range s.Properties {
		if !slices.Contains(s.Required, p) {
			optional[p] = true
		}
	}
	r.optional[name] = optional
}

// dropNullArgs is the middleware that drops null optional arguments from
// tools/call requests.
func (r *Registrar) dropNullArgs(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil {
			call.Params.Arguments = dropNulls(call.Params.Arguments, r.optional[call.Params.Name])
		}
		return next(ctx, method, req)
	}
}

// dropNulls returns args without its members that are optional and null;
// args itself when it has none (or is not a JSON object, which the SDK
// then refuses).
func dropNulls(args json.RawMessage, optional map[string]bool) json.RawMessage {
	if len(optional) == 0 || !hasNullMember(args) {
		return args
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args
	}
	n := len(m)
	for k, v := range m {
		if optional[k] && string(bytes.TrimSpace(v)) == "null" {
			delete(m, k)
		}
	}
	if len(m) == n {
		return args
	}
	b, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return b
}

// hasNullMember reports whether args may hold a member whose value is null:
// a "null" right after a colon (and spaces). It is a quick scan, so that an
// upload's megabytes of base64, where "null" turns up by chance, are not
// decoded again; a "null" that follows a colon inside a string only costs
// that decoding.
func hasNullMember(args []byte) bool {
	for i := 0; ; {
		j := bytes.Index(args[i:], []byte("null"))
		if j < 0 {
			return false
		}
		k := i + j - 1
		for k >= 0 && (args[k] == ' ' || args[k] == '\t' || args[k] == '\n' || args[k] == '\r') {
			k--
		}
		if k >= 0 && args[k] == ':' {
			return true
		}
		i += j + 4
	}
}
