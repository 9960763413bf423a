package stdiowire

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestEncodeAsSDK: every message encode writes is, byte for byte, the
// SDK's own encoding of it plus a newline.
func TestEncodeAsSDK(t *testing.T) {
	intID, _ := jsonrpc.MakeID(float64(7))
	strID, _ := jsonrpc.MakeID("a\"<b>&é")
	for name, msg := range map[string]jsonrpc.Message{
		"result, integer id":  &jsonrpc.Response{ID: intID, Result: json.RawMessage(`{"content":[{"type":"text","text":"x"}]}`)},
		"result, string id":   &jsonrpc.Response{ID: strID, Result: json.RawMessage(`{"blob":"QUJD","t":"<&>\u2028"}`)},
		"empty object result": &jsonrpc.Response{ID: intID, Result: json.RawMessage(`{}`)},
		"error":               &jsonrpc.Response{ID: intID, Error: &jsonrpc.Error{Code: -32602, Message: "bad"}},
		"no result":           &jsonrpc.Response{ID: intID},
		"request":             &jsonrpc.Request{ID: intID, Method: "ping", Params: json.RawMessage(`{}`)},
		"notification":        &jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"progress":1}`)},
	} {
		want, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encode(msg)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want)+"\n", string(got)); diff != "" {
			t.Errorf("%s (-sdk +encode):\n%s", name, diff)
		}
	}
}
