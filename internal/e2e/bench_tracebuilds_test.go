package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkTracingBuilds is what traces cost a warm send_to_session
// (x += 1 in python) end to end, through the real binary over stdio, in
// three servers started side by side and driven in turns of
// tracingBlock calls, so that all three see the same machine load:
//
//	none   the build without the exporter (go build -tags notrace)
//	off    the ordinary build with no OTEL_* endpoint (the default)
//	on     the ordinary build exporting every span over OTLP/HTTP to a
//	       receiver on loopback that discards the bodies (default
//	       sampler and batching)
//
// For each it reports the mean wall time per call (µs, every call of
// every turn) and the server's CPU per call (user + system of its
// process, from /proc; the interpreter is another process), and off and
// on as ratios to none. The binary sizes of both builds are logged.
//
//	go test ./internal/e2e -run '^$' -bench TracingBuilds -benchtime 1500x
func BenchmarkTracingBuilds(b *testing.B) {
	var exports atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		exports.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer rcv.Close()
	full, none := binary(b), notraceBinary(b)
	logSize(b, "ordinary build", full)
	logSize(b, "build without the exporter (notrace)", none)
	subjects := []*traceSubject{
		{name: "none", s: launchBinary(b, none, false, "", nil, nil)},
		{name: "off", s: launchBinary(b, full, false, "", nil, nil)},
		{name: "on", s: launchBinary(b, full, false, "", nil, nil, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL)},
	}
	for _, sub := range subjects {
		sub.prepare(b)
	}
	time.Sleep(5 * time.Second) // the servers' start-up health checks end
	b.ResetTimer()
	for i := 0; i < max(b.N, tracingBlock); i += tracingBlock {
		for _, sub := range subjects {
			sub.turn(b)
		}
	}
	b.StopTimer()
	for _, sub := range subjects[2:] {
		_ = sub.s.Session.Close() // on exit the last spans are flushed
	}
	if exports.Load() == 0 {
		b.Fatal("the traced server exported nothing to the receiver")
	}
	for _, sub := range subjects {
		b.ReportMetric(sub.meanWall(), sub.name+"-µs")
		b.ReportMetric(sub.meanCPU(), sub.name+"-cpu-µs")
	}
	for _, sub := range subjects[1:] {
		b.ReportMetric(sub.meanWall()/subjects[0].meanWall(), sub.name+"/none")
		b.ReportMetric(sub.meanCPU()/subjects[0].meanCPU(), sub.name+"/none-cpu")
	}
	b.ReportMetric(0, "ns/op")
}

// tracingBlock is how many calls one server gets before the next one's turn.
const tracingBlock = 50

// traceSubject is one of the servers compared, with what its calls took.
type traceSubject struct {
	name  string
	s     *server
	args  map[string]any
	calls int
	wall  time.Duration
	cpu   time.Duration
}

// prepare starts the session the turns send to and warms it.
func (t *traceSubject) prepare(b *testing.B) {
	id := t.s.startSession("python").SessionID
	if _, isErr := t.s.send(id, "x = 0", nil); isErr {
		b.Fatalf("%s: first send failed", t.name)
	}
	t.args = map[string]any{"session_id": id, "code": "x += 1"}
	for range 20 {
		t.call(b)
	}
}

func (t *traceSubject) call(b *testing.B) {
	if res := t.s.call("send_to_session", t.args); res.IsError {
		b.Fatalf("%s: %s", t.name, text(res))
	}
}

// turn runs one block of calls and adds its time and the server's CPU.
func (t *traceSubject) turn(b *testing.B) {
	c0, t0 := processCPUOf(t.s.Cmd.Process.Pid), time.Now()
	for range tracingBlock {
		t.call(b)
	}
	t.wall += time.Since(t0)
	t.cpu += processCPUOf(t.s.Cmd.Process.Pid) - c0
	t.calls += tracingBlock
}

func (t *traceSubject) meanWall() float64 { return float64(t.wall.Microseconds()) / float64(t.calls) }
func (t *traceSubject) meanCPU() float64  { return float64(t.cpu.Microseconds()) / float64(t.calls) }

// processCPUOf is the user and system CPU time of process pid, from
// /proc/pid/stat (clock ticks of 10 ms; a block's figure is coarse, the
// sum over every block is not). 0 where there is no /proc.
func processCPUOf(pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// notraceBinary builds codexec and its sandbox helper with -tags notrace.
func notraceBinary(b *testing.B) string {
	dir := b.TempDir()
	out, err := exec.Command("go", "build", "-tags", "notrace", "-o", dir+"/", "github.com/codexec/codexec/cmd/codexec",
		"github.com/codexec/codexec/cmd/codexec-sandbox").CombinedOutput()
	if err != nil {
		b.Fatalf("go build -tags notrace: %v\n%s", err, out)
	}
	return filepath.Join(dir, "codexec")
}

func logSize(b *testing.B, what, path string) {
	if st, err := os.Stat(path); err == nil {
		b.Logf("%s: %s is %.1f MiB", what, filepath.Base(path), float64(st.Size())/(1<<20))
	}
}
