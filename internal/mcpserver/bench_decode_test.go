package mcpserver_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	sjson "github.com/segmentio/encoding/json"
)

// BenchmarkRequestDecode decodes one tools/call request's params the two
// ways the go-sdk's JSON layer could: through a Decoder over a
// bytes.Reader, as its internal Unmarshal does for every message (the
// envelope, the params, the _meta check, the typed params: several times
// a call, each Decoder starting a 32 KiB buffer and copying the message
// into it), and by parsing the bytes in place (segmentio's Parse, which
// codexec's argument decoding uses). The ratio of the two is what the
// SDK's part of a call could lose; bytes/op is its garbage.
//
//	go test ./internal/mcpserver -run '^$' -bench RequestDecode -benchmem
func BenchmarkRequestDecode(b *testing.B) {
	for _, size := range []int{6, 64 << 10, 1 << 20} {
		params := []byte(`{"name":"send_to_session","arguments":{"session_id":"s_0123456789ab","code":"` + strings.Repeat("x", size) + `"},"_meta":{"progressToken":7}}`)
		b.Run(fmt.Sprintf("decoder/%d", size), func(b *testing.B) {
			b.SetBytes(int64(len(params)))
			for b.Loop() {
				var v callParams
				dec := sjson.NewDecoder(bytes.NewReader(params))
				dec.DontMatchCaseInsensitiveStructFields()
				if err := dec.Decode(&v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("parse/%d", size), func(b *testing.B) {
			b.SetBytes(int64(len(params)))
			for b.Loop() {
				var v callParams
				rest, err := sjson.Parse(params, &v, sjson.DontMatchCaseInsensitiveStructFields)
				if err != nil || len(bytes.TrimSpace(rest)) > 0 {
					b.Fatal(err, len(rest))
				}
			}
		})
	}
}

// callParams is the shape of tools/call params the SDK decodes into.
type callParams struct {
	Meta      map[string]any   `json:"_meta,omitempty"`
	Name      string           `json:"name"`
	Arguments sjson.RawMessage `json:"arguments,omitempty"`
}
