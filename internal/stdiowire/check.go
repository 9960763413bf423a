package stdiowire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The JSON-RPC 2.0 error codes a refused message is answered with.
const (
	// CodeParseError answers a line that is not JSON.
	CodeParseError = jsonrpc.CodeParseError
	// CodeInvalidRequest answers JSON that is not a message the server can
	// take: not an object, a batch, a bad member, an id it cannot echo.
	CodeInvalidRequest = jsonrpc.CodeInvalidRequest
)

// maxDepth is the deepest nesting of objects and arrays the SDK's JSON
// reader accepts; a deeper message makes it end the session.
const maxDepth = 1000

// maxExactID bounds numeric ids: the SDK reads an id as a float64 and keeps
// it as an int64, and only integers up to 2^53 in magnitude survive both
// unchanged.
const maxExactID = 1 << 53

// maxReason bounds the part of an error message taken from the input, so a
// reply stays short whatever the client sent.
const maxReason = 300

// Check decides one message line, given without its line ending. It returns
// nil when the SDK can take the line as it is, and otherwise the JSON-RPC
// error response (one line, no newline) that answers it: -32700 when the
// line is not JSON, -32600 when it is JSON but not a message the server
// takes. The reply's id is the message's own id, byte for byte, when the
// message has a string or numeric id, and null otherwise.
func Check(line []byte) []byte {
	r, _ := check(line)
	if r == nil {
		return nil
	}
	return r.reply()
}

// refusal is a refused message: the error code and reason, and the id to
// answer with (JSON text; null when the message has no usable id).
type refusal struct {
	code   int
	reason string
	id     json.RawMessage
}

var null = json.RawMessage("null")

func invalid(id json.RawMessage, format string, args ...any) *refusal {
	return &refusal{code: CodeInvalidRequest, reason: fmt.Sprintf(format, args...), id: id}
}

// check is Check's decision, and for a line the SDK takes, the message
// it decodes to (see decoded).
func check(line []byte) (*refusal, decoded) {
	if !valid(line) {
		var v json.RawMessage
		err := json.Unmarshal(line, &v)
		return &refusal{code: CodeParseError, reason: fmt.Sprintf("not JSON (%v)", err), id: null}, decoded{}
	}
	switch bytes.TrimLeft(line, " \t\r\n")[0] {
	case '{':
	case '[':
		return invalid(null, "JSON-RPC batches are not supported (MCP removed them in protocol version 2025-06-18); send one message per line"), decoded{}
	default:
		return invalid(null, "a JSON-RPC message is a JSON object"), decoded{}
	}
	env, deepest, count := members(bytes.TrimSpace(line))
	return checkEnvelope(line, env, deepest, count)
}

// decoded is the message a line the SDK takes decodes to, as
// jsonrpc.DecodeMessage would decode it: msg when check had the SDK decode
// it, else the request or response that check's reading of its members
// settles, whose params or result still point into the line.
type decoded struct {
	msg            jsonrpc.Message
	id             jsonrpc.ID
	request        bool // it has a method
	method         string
	params, result json.RawMessage
}

// message is d as a message of its own (params and result copied out of
// the line, which is reused).
func (d decoded) message() jsonrpc.Message {
	switch {
	case d.msg != nil:
		return d.msg
	case d.request:
		return &jsonrpc.Request{ID: d.id, Method: d.method, Params: bytes.Clone(d.params)}
	}
	return &jsonrpc.Response{ID: d.id, Result: bytes.Clone(d.result)}
}

// checkEnvelope checks the members of a message object. The SDK decodes
// them as encoding/json does (exact member names, the last of a repeated
// member wins), so these checks are what it needs; the rare message they do
// not settle (an "error" member, a repeated member) is also decoded by the
// SDK's own decoder, which is slow (a 64 KiB buffer a call) to do for all.
// A message it takes comes back decoded, so the connection does not decode
// it again.
func checkEnvelope(line []byte, env map[string]json.RawMessage, deepest, members int) (*refusal, decoded) {
	rawID, hasID := env["id"]
	replyID := echoable(rawID)
	if deepest > maxDepth {
		return invalid(replyID, "the message nests deeper than %d levels", maxDepth), decoded{}
	}
	var version string
	if json.Unmarshal(env["jsonrpc"], &version) != nil || version != "2.0" {
		return invalid(replyID, `"jsonrpc" must be "2.0"`), decoded{}
	}
	want, r := checkID(rawID, hasID, replyID)
	if r != nil {
		return r, decoded{}
	}
	d := decoded{id: want}
	if rawMethod, ok := env["method"]; ok {
		if rawMethod[0] != '"' || json.Unmarshal(rawMethod, &d.method) != nil {
			return invalid(replyID, `"method" must be a string`), decoded{}
		}
		d.request = true
	} else if !hasID {
		return invalid(null, `a message needs a "method" (request, notification) or an "id" (response)`), decoded{}
	}
	if _, hasError := env["error"]; !hasError && members == len(env) {
		d.params, d.result = env["params"], env["result"]
		return nil, d
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return invalid(replyID, "%v", err), decoded{}
	}
	if got := messageID(msg); got != want {
		return invalid(replyID, `the message's "id" cannot be read unambiguously`), decoded{}
	}
	return nil, decoded{msg: msg}
}

// checkID checks the id member and returns the id the SDK must read from
// the message (the zero ID when there is none).
func checkID(raw json.RawMessage, present bool, replyID json.RawMessage) (jsonrpc.ID, *refusal) {
	if !present {
		return jsonrpc.ID{}, nil
	}
	switch {
	case bytes.Equal(raw, null):
		return jsonrpc.ID{}, invalid(null, `"id" must not be null (MCP); give a string or an integer, or leave it out for a notification`)
	case raw[0] == '"':
		var s string
		if !utf8.Valid(raw) || loneSurrogate(raw) || json.Unmarshal(raw, &s) != nil {
			return jsonrpc.ID{}, invalid(replyID, `the string "id" is not valid Unicode; the server could not echo it unchanged`)
		}
		id, _ := jsonrpc.MakeID(s)
		return id, nil
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		n, ok := exactInt(string(raw))
		if !ok {
			return jsonrpc.ID{}, invalid(replyID, `a numeric "id" must be an integer from -%d to %d written without fraction or exponent; use a string id for others`, int64(maxExactID), int64(maxExactID))
		}
		id, _ := jsonrpc.MakeID(float64(n))
		return id, nil
	}
	return jsonrpc.ID{}, invalid(null, `"id" must be a string or an integer`)
}

// exactInt parses a numeric id the SDK carries unchanged: a canonical
// integer (no sign on zero, no leading zeros, fraction or exponent) of at
// most 2^53 in magnitude, which the SDK writes back as the same text.
func exactInt(s string) (int64, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || digits[0] == '0' && (len(digits) > 1 || len(s) > 1) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > maxExactID || n < -maxExactID {
		return 0, false
	}
	return n, true
}

// echoable is the id to answer a refused message with: its own id when
// that is a string or a number (any, echoed byte for byte), else null.
func echoable(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !utf8.Valid(raw) {
		return null
	}
	if c := raw[0]; c == '"' || c == '-' || c >= '0' && c <= '9' {
		return raw
	}
	return null
}

// messageID is the id the SDK read from a message (zero when it has none).
func messageID(msg jsonrpc.Message) jsonrpc.ID {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		return m.ID
	case *jsonrpc.Response:
		return m.ID
	}
	return jsonrpc.ID{}
}

// loneSurrogate reports whether a JSON string holds a \u escape of half a
// UTF-16 surrogate pair, which decoders replace by U+FFFD: such an id would
// come back changed.
func loneSurrogate(s []byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		r, ok := hexEscape(s, i)
		if !ok {
			i++ // a two-character escape such as \\ or \"
			continue
		}
		i += 5
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			low, ok := hexEscape(s, i+1)
			if !ok || low < 0xDC00 || low > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

// hexEscape reads the \uXXXX escape at s[i:].
func hexEscape(s []byte, i int) (rune, bool) {
	if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s[i+2:i+6]), 16, 32)
	return rune(n), err == nil
}

// reply is the JSON-RPC error response of r, one line without newline.
func (r *refusal) reply() []byte {
	prefix := "Invalid Request: "
	if r.code == CodeParseError {
		prefix = "Parse error: "
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // echo the id as given, not with <>& escaped
	err := enc.Encode(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", r.id, wireError{r.code, prefix + clip(r.reason)}})
	if err != nil && !bytes.Equal(r.id, null) {
		// Every id taken from a message is valid JSON; should one not
		// encode all the same, the reply says null rather than nothing.
		return (&refusal{code: r.code, reason: r.reason, id: null}).reply()
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// clip shortens s to maxReason bytes on a character boundary.
func clip(s string) string {
	if len(s) <= maxReason {
		return s
	}
	return strings.ToValidUTF8(s[:maxReason], "") + "…"
}
