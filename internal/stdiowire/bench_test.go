package stdiowire

import (
	"strings"
	"testing"
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
