package tasks

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkHTTPPassThrough is what the tasks wire costs an HTTP POST that
// is not about tasks (the body read once, searched for the names it acts
// on, and handed on), against the same POST to the next handler directly,
// for a small tools/call and one carrying 1 MiB of code. The next handler
// reads the whole body into memory, as the SDK does (io.ReadAll).
//
//	go test ./internal/mcpserver/tasks -run '^$' -bench HTTPPassThrough
func BenchmarkHTTPPassThrough(b *testing.B) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.ReadAll(r.Body) })
	wrapped := NewWire(nil, nil).Handler(next, 4<<20, nil)
	for _, size := range []int{64, 1 << 20} {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"` +
			strings.Repeat("x", size) + `"}}}`)
		for name, h := range map[string]http.Handler{"direct": next, "wrapped": wrapped} {
			b.Run(name+"-"+map[int]string{64: "64B", 1 << 20: "1MiB"}[size], func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
					h.ServeHTTP(httptest.NewRecorder(), r)
				}
			})
		}
	}
}
