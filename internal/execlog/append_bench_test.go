package execlog

import "testing"

// BenchmarkAppendExecution measures one typical entry appended to a daily
// file (the per-run cost of logging).
func BenchmarkAppendExecution(b *testing.B) {
	l, _ := New(b.TempDir())
	defer l.Close()
	e := entry("exec_bench", 200)
	b.ReportAllocs()
	for b.Loop() {
		if err := l.AppendExecution(e); err != nil {
			b.Fatal(err)
		}
	}
}
