package stdiowire

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// BenchmarkCheck measures the cost Check adds to each message: a typical
// tools/call, and a 1 MiB upload.
func BenchmarkCheck(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"tools_call", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print(sum(range(10)))"}}}`},
		{"upload_1MiB", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"upload_file","arguments":{"path":"a.bin","content_base64":"` + strings.Repeat("QUJD", 1<<18) + `"}}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			line := []byte(bc.line)
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if Check(line) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}

// BenchmarkCheckUpload compares, on a 1 MiB upload line, Check against
// json.Valid alone (which its own validator replaces) and against what it
// did before (json.Valid, then encoding/json decoding the members and a
// byte-at-a-time scan for nesting: decodedMembers), interleaved in one loop,
// and reports the ratios.
//
//	go test ./internal/stdiowire -run '^$' -bench CheckUpload -benchtime 50x
func BenchmarkCheckUpload(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"upload_file","arguments":{"path":"a.bin","content_base64":"` + strings.Repeat("QUJD", 1<<18) + `"}}}`)
	subjects := []func(){
		func() {
			if Check(line) != nil {
				b.Fatal("refused")
			}
		},
		func() { _ = json.Valid(line) },
		func() { _ = json.Valid(line); decodedMembers(b, line) },
	}
	var took [3]time.Duration
	for b.Loop() {
		for i, f := range subjects {
			t0 := time.Now()
			f()
			took[i] += time.Since(t0)
		}
	}
	mb := float64(len(line)) / 1e6 * float64(b.N)
	b.ReportMetric(mb/took[0].Seconds(), "check-MB/s")
	b.ReportMetric(mb/took[1].Seconds(), "valid-MB/s")
	b.ReportMetric(mb/took[2].Seconds(), "decode-MB/s")
	b.ReportMetric(float64(took[0])/float64(took[1]), "check/valid")
	b.ReportMetric(float64(took[0])/float64(took[2]), "check/decode")
}
