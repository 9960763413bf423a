package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type glueIn struct {
	Name  string         `json:"name"`
	Count *int           `json:"count,omitempty"`
	Tags  []string       `json:"tags,omitempty"`
	Extra map[string]any `json:"extra,omitempty"`
}

type glueOut struct {
	Echo  glueIn `json:"echo"`
	Valid bool   `json:"valid"`
}

// TestRegisterTypedMatchesSDK calls one tool registered with mcp.AddTool and
// with registerTyped with the same arguments and wants the same results.
func TestRegisterTypedMatchesSDK(t *testing.T) {
	h := func(_ context.Context, _ *mcp.CallToolRequest, in glueIn) (*mcp.CallToolResult, glueOut, error) {
		switch in.Name {
		case "fail":
			return nil, glueOut{}, errors.New("tool failed")
		case "wire":
			return nil, glueOut{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}
		case "text":
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "own text"}}}, glueOut{Echo: in}, nil
		}
		return nil, glueOut{Echo: in, Valid: true}, nil
	}
	tool := func() *mcp.Tool {
		in := schemaOf[glueIn](func(s *jsonschema.Schema) { s.AdditionalProperties = nil })
		return &mcp.Tool{Name: "t", InputSchema: in, OutputSchema: outputSchema[glueOut]()}
	}
	sdk := glueClient(t, func(s *mcp.Server) { mcp.AddTool(s, tool(), h) })
	ours := glueClient(t, func(s *mcp.Server) { registerTyped(s, tool(), h) })
	for _, args := range []string{
		`{"name":"a"}`, `{"name":"a","count":3,"tags":["x"],"extra":{"k":[1,{"z":null}]}}`,
		`{}`, `null`, `{"name":1}`, `{"name":"a","count":"3"}`, `{"Name":"miscased"}`,
		`{"name":"a","NAME":"b"}`, `{"name":"a","unknown":true}`, `{"name":"fail"}`, `{"name":"wire"}`, `{"name":"text"}`,
	} {
		t.Run(args, func(t *testing.T) {
			got, gotErr := glueCall(ours, args)
			want, wantErr := glueCall(sdk, args)
			if diff := cmp.Diff(want, got); diff != "" || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("result (-sdk +ours):\n%s\nerrors: sdk %v, ours %v", diff, wantErr, gotErr)
			}
		})
	}
}

// glueCall returns the call's result as JSON with the JSON text of text
// contents decoded (the SDK writes its text fallback with sorted keys,
// registerTyped in field order: the same JSON).
func glueCall(cs *mcp.ClientSession, args string) (any, error) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t", Arguments: json.RawMessage(args)})
	if err != nil {
		return nil, err
	}
	for i, c := range res.Content {
		var v map[string]any
		if tc, ok := c.(*mcp.TextContent); ok && json.Unmarshal([]byte(tc.Text), &v) == nil {
			b, _ := json.Marshal(v)
			res.Content[i] = &mcp.TextContent{Text: string(b)}
		}
	}
	b, _ := json.Marshal(res)
	var out any
	return out, json.Unmarshal(b, &out)
}
