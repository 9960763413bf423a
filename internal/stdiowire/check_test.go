package stdiowire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// answer is the part of a reply the tests compare.
type answer struct {
	Code int
	ID   string // the reply's id as JSON text
}

// parseReply decodes a reply and checks it is a well-formed JSON-RPC error
// response: version, an id member, a code and a non-empty message.
func parseReply(t testing.TB, reply []byte) answer {
	t.Helper()
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    *int   `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(reply, &r); err != nil {
		t.Fatalf("reply %q is not JSON: %v", reply, err)
	}
	if r.JSONRPC != "2.0" || r.ID == nil || r.Error == nil || r.Error.Code == nil || r.Error.Message == "" {
		t.Fatalf("reply %q is not a JSON-RPC error response", reply)
	}
	if strings.ContainsAny(string(reply), "\n") {
		t.Fatalf("reply %q spans lines", reply)
	}
	return answer{*r.Error.Code, string(r.ID)}
}

var deep = strings.Repeat("[", 1500) + strings.Repeat("]", 1500)

// checkCases are lines with what Check must make of them: pass (nil) or an
// answer. They seed the fuzz test too.
var checkCases = []struct {
	name string
	line string
	want *answer
}{
	{"request", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil},
	{"string id", `{"jsonrpc":"2.0","id":"a<b>&c","method":"ping"}`, nil},
	{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil},
	{"response", `{"jsonrpc":"2.0","id":3,"result":{}}`, nil},
	{"error response", `{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}`, nil},
	{"largest exact id", `{"jsonrpc":"2.0","id":-9007199254740992,"method":"ping"}`, nil},
	{"params not an object", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":5}`, nil},
	{"surrogate pair id", `{"jsonrpc":"2.0","id":"\ud83d\ude00","method":"ping"}`, nil},
	{"deep params within limit", `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}}`, nil},

	{"truncated", `{"jsonrpc":"2.0","id":1,"method":"pi`, &answer{CodeParseError, "null"}},
	{"not JSON", `hello`, &answer{CodeParseError, "null"}},
	{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"ping"} xx`, &answer{CodeParseError, "null"}},
	{"two messages", `{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}`, &answer{CodeParseError, "null"}},
	{"empty object", `{}`, &answer{CodeInvalidRequest, "null"}},
	{"empty batch", `[]`, &answer{CodeInvalidRequest, "null"}},
	{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, &answer{CodeInvalidRequest, "null"}},
	{"scalar", `5`, &answer{CodeInvalidRequest, "null"}},
	{"null", `null`, &answer{CodeInvalidRequest, "null"}},
	{"method a number", `{"jsonrpc":"2.0","method":5,"id":3}`, &answer{CodeInvalidRequest, "3"}},
	{"method null", `{"jsonrpc":"2.0","method":null,"id":3}`, &answer{CodeInvalidRequest, "3"}},
	{"no version", `{"id":7,"method":"ping"}`, &answer{CodeInvalidRequest, "7"}},
	{"version 1.0", `{"jsonrpc":"1.0","id":"x","method":"ping"}`, &answer{CodeInvalidRequest, `"x"`}},
	{"neither method nor id", `{"jsonrpc":"2.0"}`, &answer{CodeInvalidRequest, "null"}},
	{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, &answer{CodeInvalidRequest, "null"}},
	{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, &answer{CodeInvalidRequest, "null"}},
	{"bool id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, &answer{CodeInvalidRequest, "null"}},
	{"id beyond int64", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, &answer{CodeInvalidRequest, "123456789012345678901234567890"}},
	{"id beyond 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, &answer{CodeInvalidRequest, "9007199254740993"}},
	{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, &answer{CodeInvalidRequest, "1.5"}},
	{"exponent id", `{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, &answer{CodeInvalidRequest, "1e3"}},
	{"negative zero id", `{"jsonrpc":"2.0","id":-0,"method":"ping"}`, &answer{CodeInvalidRequest, "-0"}},
	{"lone surrogate id", `{"jsonrpc":"2.0","id":"\ud800x","method":"ping"}`, &answer{CodeInvalidRequest, `"\ud800x"`}},
	{"invalid UTF-8 id", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}", &answer{CodeInvalidRequest, "null"}},
	{"deeply nested batch", deep, &answer{CodeInvalidRequest, "null"}},
	{"deeply nested params", `{"jsonrpc":"2.0","id":8,"method":"ping","params":{"a":` + deep + `}}`, &answer{CodeInvalidRequest, "8"}},
	{"nesting past JSON's own limit", strings.Repeat("[", 20000) + strings.Repeat("]", 20000), &answer{CodeParseError, "null"}},
	{"bad error member", `{"jsonrpc":"2.0","id":3,"error":"x"}`, &answer{CodeInvalidRequest, "3"}},
	{"response with null id", `{"jsonrpc":"2.0","id":null,"result":{}}`, &answer{CodeInvalidRequest, "null"}},
	{"id given twice", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, nil},
	{"id in other case", `{"jsonrpc":"2.0","ID":1,"method":"ping"}`, nil},
	{"last version wins", `{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"ping"}`, &answer{CodeInvalidRequest, "1"}},
	{"last method wins", `{"jsonrpc":"2.0","method":"ping","method":5,"id":1}`, &answer{CodeInvalidRequest, "1"}},
	{"error member on a request", `{"jsonrpc":"2.0","id":1,"method":"ping","error":{"code":1.5,"message":"x"}}`, &answer{CodeInvalidRequest, "1"}},
	{"invalid UTF-8 in params", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"a\":\"\xff\"}}", nil},
}

func TestCheck(t *testing.T) {
	for _, tc := range checkCases {
		t.Run(tc.name, func(t *testing.T) {
			reply := Check([]byte(tc.line))
			if tc.want == nil {
				if reply != nil {
					t.Fatalf("Check refused a message the SDK takes: %s", reply)
				}
				return
			}
			if reply == nil {
				t.Fatal("Check passed a message the SDK cannot take")
			}
			if diff := cmp.Diff(*tc.want, parseReply(t, reply)); diff != "" {
				t.Errorf("reply %s (-want +got):\n%s", reply, diff)
			}
		})
	}
}
