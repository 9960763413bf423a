package driver

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkConnExec measures Conn.Exec of `x += 1` in the python driver
// (subprocess backend) against, interleaved, a raw pipe round trip to the
// same driver program started directly: what the Go side of the protocol
// (framing, demultiplexing, waiting for both streams) adds. Reports p50s
// and their ratio.
//
//	go test ./internal/driver -run '^$' -bench ConnExec -benchtime 3000x
func BenchmarkConnExec(b *testing.B) {
	c := start(b, "python")
	raw := rawPython(b)
	if oc := exec1(b, c, "x = 0"); !oc.Reply.OK {
		b.Fatal(oc)
	}
	var conn, pipe []time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		raw(i)
		t1 := time.Now()
		if oc := exec1(b, c, "x += 1"); !oc.Reply.OK {
			b.Fatal(oc)
		}
		pipe, conn = append(pipe, t1.Sub(t0)), append(conn, time.Since(t1))
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds()) / 1000
	}
	c50, r50 := p50(conn), p50(pipe)
	b.ReportMetric(c50, "conn-p50-µs")
	b.ReportMetric(r50, "pipe-p50-µs")
	b.ReportMetric(c50/r50, "ratio")
}

// rawPython starts the python driver as the server does, without a Conn,
// and returns one exec round trip on it.
func rawPython(b *testing.B) func(i int) {
	interp, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("python3 is not installed")
	}
	mark := "\x1e\x1fbench:"
	args, err := argv("python", interp, mark)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = b.TempDir()
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	out := bufio.NewReader(outPipe)
	frame := func() {
		for {
			line, err := out.ReadBytes('\n')
			if err != nil {
				b.Fatal(err)
			}
			if bytes.Contains(line, []byte(mark)) {
				return
			}
		}
	}
	frame() // ready
	fmt.Fprintf(in, "{\"id\": 0, \"op\": \"exec\", \"code\": \"x = 0\"}\n")
	frame()
	return func(i int) {
		fmt.Fprintf(in, "{\"id\": %d, \"op\": \"exec\", \"code\": \"x += 1\"}\n", i+1)
		frame()
	}
}
