package tool

import (
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// benchResult has the shape of a run's result (strings, numbers, a
// nullable exit code, a list), the common case of a checked result.
type benchResult struct {
	Success     bool     `json:"success"`
	ExecutionID string   `json:"execution_id"`
	Language    string   `json:"language"`
	Stdout      string   `json:"stdout"`
	Stderr      string   `json:"stderr"`
	ExitCode    *int     `json:"exit_code"`
	DurationMs  int64    `json:"duration_ms"`
	Status      string   `json:"status"`
	Truncated   bool     `json:"truncated"`
	Artifacts   []string `json:"artifacts"`
}

// BenchmarkResultCheck is what checking a result against its output
// schema adds to a call: each size is run twice, "plain" (marshalled into
// the structured content, as every result is) and "checked" (the same,
// then decoded and validated against the output schema, as Add does on
// every call). Compare checked with plain of the same size:
//
//	go test ./internal/mcpserver/tool -run '^$' -bench ResultCheck
func BenchmarkResultCheck(b *testing.B) {
	s := OutputSchema[benchResult]()
	rs, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		b.Fatal(err)
	}
	zero := 0
	for _, size := range []struct {
		name string
		n    int
	}{{"stdout_10B", 10}, {"stdout_1KiB", 1 << 10}, {"stdout_64KiB", 64 << 10}} {
		out := benchResult{Success: true, ExecutionID: "exec_1", Language: "python", Stdout: strings.Repeat("x", size.n),
			ExitCode: &zero, Status: "success", Artifacts: []string{"a.csv"}}
		for _, mode := range []struct {
			name   string
			schema *jsonschema.Resolved
		}{{"plain", nil}, {"checked", rs}} {
			b.Run(size.name+"/"+mode.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if res := success(nil, out, mode.schema); res.IsError {
						b.Fatal(res.Content)
					}
				}
			})
		}
	}
}
