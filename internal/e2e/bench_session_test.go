package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"testing"
	"time"
)

// BenchmarkSendToSessionRoundTrip measures the end-to-end send_to_session
// round trip (client → server → python interpreter → client) for `x += 1`,
// and, in the same run, a raw pipe round trip to the same driver program
// started directly (the floor any design can reach). Reports p50/p90 of both
// and the p50 ratio.
//
//	go test ./internal/e2e/ -run '^$' -bench SendToSessionRoundTrip -benchtime 2000x
func BenchmarkSendToSessionRoundTrip(b *testing.B) {
	s := start(b)
	sess := s.startSession("python")
	s.send(sess.SessionID, "x = 0", nil)
	raw := startRawDriver(b)
	var mcpT, rawT []time.Duration
	args := map[string]any{"session_id": sess.SessionID, "code": "x += 1"}
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		raw.roundTrip(b, i)
		t1 := time.Now()
		if res := s.call("send_to_session", args); res.IsError {
			b.Fatal(text(res))
		}
		rawT = append(rawT, t1.Sub(t0))
		mcpT = append(mcpT, time.Since(t1))
	}
	p50, p90 := percentile(mcpT, 50), percentile(mcpT, 90)
	r50 := percentile(rawT, 50)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p90), "p90-ms")
	b.ReportMetric(ms(r50), "raw-p50-ms")
	b.ReportMetric(float64(p50)/float64(r50), "ratio")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, len(s)*p/100)]
}

// rawDriver is the python session driver started without codexec.
type rawDriver struct {
	in   io.WriteCloser
	out  *bufio.Reader
	mark []byte
}

func startRawDriver(b testing.TB) *rawDriver {
	ckpt, err := os.ReadFile("../driver/checkpoint_python.py")
	if err != nil {
		b.Fatal(err)
	}
	drv, err := os.ReadFile("../driver/driver_python.py")
	if err != nil {
		b.Fatal(err)
	}
	src := append(append(ckpt, '\n'), drv...) // as the server starts it
	mark := "\x1e\x1fbench:"
	cmd := exec.Command("/usr/bin/python3", "-c", string(src), mark)
	cmd.Dir = b.TempDir()
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	d := &rawDriver{in: in, out: bufio.NewReader(out), mark: []byte(mark)}
	d.readFrame(b) // ready
	fmt.Fprintf(in, "{\"id\": 0, \"op\": \"exec\", \"code\": \"x = 0\"}\n")
	d.readFrame(b)
	return d
}

func (d *rawDriver) roundTrip(b testing.TB, i int) {
	fmt.Fprintf(d.in, "{\"id\": %d, \"op\": \"exec\", \"code\": \"x += 1\"}\n", i+1)
	d.readFrame(b)
}

func (d *rawDriver) readFrame(b testing.TB) {
	for {
		line, err := d.out.ReadBytes('\n')
		if err != nil {
			b.Fatal(err)
		}
		if bytes.Contains(line, d.mark) {
			return
		}
	}
}
