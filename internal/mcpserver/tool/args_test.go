package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// argsIn has one argument of each kind the tools take.
type argsIn struct {
	Name      string   `json:"name"`
	TimeoutMs *Int     `json:"timeout_ms,omitempty"`
	Offset    int64    `json:"offset,omitempty"`
	Limit     int      `json:"limit,omitempty"`
	Recursive bool     `json:"recursive,omitempty"`
	Args      []string `json:"args,omitempty"`
}

// TestArgumentErrors checks that every malformed argument is refused with
// INVALID_PARAMS and a message naming the argument and the expected type,
// and that integers beyond their Go type are refused, not wrapped around.
func TestArgumentErrors(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	var got argsIn
	Add(NewRegistrar(srv), &mcp.Tool{Name: "t"}, func(_ context.Context, _ *mcp.CallToolRequest, in argsIn) (*mcp.CallToolResult, listOut, error) {
		got = in
		return nil, listOut{}, nil
	})
	cs := connect(t, srv)
	for _, tc := range []struct {
		args string
		want string // the error message; "" for a call that succeeds
	}{
		{`{"name":"a","timeout_ms":"1000"}`, `timeout_ms must be an integer (got string "1000")`},
		{`{"name":"a","timeout_ms":1.5}`, `timeout_ms must be an integer (got number 1.5)`},
		{`{}`, `name is required`},
		{`{"name":7}`, `name must be a string (got number 7)`},
		{`{"name":"a","recursive":"yes"}`, `recursive must be a boolean (true or false) (got string "yes")`},
		{`{"name":"a","args":"x"}`, `args must be an array (got string "x")`},
		{`{"name":"a","args":["x",3]}`, `args[1] must be a string (got number 3)`},
		{`{"name":"a","offset":1e30}`, `offset must be an integer from -9223372036854775808 to 9223372036854775807 (got 1e30)`},
		{`{"name":"a","limit":-99999999999999999999}`, `limit must be an integer from -9223372036854775808 to 9223372036854775807 (got -99999999999999999999)`},
		{`{"name":"a","Name":"b"}`, ``}, // names match exactly: Name is an unknown argument, ignored
		{`{"name":"a","offset":9007199254740993}`, ``},
	} {
		t.Run(tc.args, func(t *testing.T) { checkArgs(t, cs, tc.args, tc.want) })
		// The same with big arguments, which are decoded in place.
		big := `{"pad":"` + strings.Repeat("x", bigArgs) + `"}`
		if tc.args != "{}" {
			big = `{"pad":"` + strings.Repeat("x", bigArgs) + `",` + strings.TrimPrefix(tc.args, "{")
		}
		t.Run("big "+tc.args, func(t *testing.T) { checkArgs(t, cs, big, tc.want) })
	}
	// Decoded from the text as sent: no digit lost to float64.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t", Arguments: json.RawMessage(`{"name":"a","offset":9007199254740993}`)}); err != nil {
		t.Fatal(err)
	}
	if got.Offset != 9007199254740993 {
		t.Errorf("offset = %d, want 9007199254740993", got.Offset)
	}
}

// checkArgs calls tool t with args and compares its error with want ("" for
// none).
func checkArgs(t *testing.T, cs *mcp.ClientSession, args, want string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t", Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatal(err)
	}
	var e Error
	if res.IsError {
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &e); err != nil {
			t.Fatal(err)
		}
	}
	wantErr := Error{}
	if want != "" {
		wantErr = Error{Message: want, Code: CodeInvalidParams}
	}
	if diff := cmp.Diff(wantErr, e); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
