package tool

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type nullIn struct {
	N    *Int     `json:"n,omitempty"`
	Tags []string `json:"tags,omitempty"`
	S    string   `json:"s"`
}

type nullOut struct {
	Got string `json:"got"`
}

// TestNullOptionalArguments: the schema types optional arguments without
// null, and a client may still send them as null (as omitted); a required
// argument sent as null is refused.
func TestNullOptionalArguments(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	Add(NewRegistrar(srv), &mcp.Tool{Name: "t", Title: "T"},
		func(_ context.Context, _ *mcp.CallToolRequest, in nullIn) (*mcp.CallToolResult, nullOut, error) {
			b, _ := json.Marshal(in)
			return nil, nullOut{Got: string(b)}, nil
		})
	cs := connect(t, srv)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schema, _ := json.Marshal(tools.Tools[0].InputSchema)
	if want := `{"properties":{"n":{"type":"integer"},"s":{"type":"string"},"tags":{"items":{"type":"string"},"type":"array"}},"required":["s"],"type":"object"}`; string(schema) != want {
		t.Errorf("input schema %s, want %s", schema, want)
	}
	for _, tc := range []struct {
		name    string
		args    map[string]any
		want    string // the handler's input, or "" for a refused call
		isError bool
	}{
		{"omitted", map[string]any{"s": "x"}, `{"s":"x"}`, false},
		{"null optional", map[string]any{"n": nil, "tags": nil, "s": "x"}, `{"s":"x"}`, false},
		{"set", map[string]any{"n": 5, "tags": []string{"a"}, "s": "x"}, `{"n":5,"tags":["a"],"s":"x"}`, false},
		{"null required", map[string]any{"s": nil}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t", Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			var out nullOut
			if !res.IsError {
				b, _ := json.Marshal(res.StructuredContent)
				_ = json.Unmarshal(b, &out)
			}
			if diff := cmp.Diff([]any{tc.isError, tc.want}, []any{res.IsError, out.Got}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestHasNullMember(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":null}`:               true,
		`{"a" : 	null}`:            true,
		`{"b64":"xxnullyy"}`:       false,
		`{"a":"x","b":1}`:          false,
		`{"t":"key: null inside"}`: true, // a string that looks like one: decoded to be sure
		`null`:                     false,
	} {
		if got := hasNullMember([]byte(in)); got != want {
			t.Errorf("hasNullMember(%s) = %v, want %v", in, got, want)
		}
	}
}
