package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	loadClients = 50
	loadCalls   = 2000 // in total, loadCalls/loadClients per client
)

// loadStats are the figures of one load run.
type loadStats struct {
	lat  []time.Duration
	lost int
	wall time.Duration
}

// runLoad makes loadCalls mixed calls from loadClients goroutines, client i
// using session(i): execute_code bash, tools/list, execute_code python and
// ping in turn. A call is lost when it errors or returns the wrong output.
func runLoad(session func(i int) *mcp.ClientSession) loadStats {
	var mu sync.Mutex
	var st loadStats
	var wg sync.WaitGroup
	start := time.Now()
	for i := range loadClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs := session(i)
			for n := range loadCalls / loadClients {
				t0 := time.Now()
				ok := mixedCall(cs, i, n)
				d := time.Since(t0)
				mu.Lock()
				st.lat = append(st.lat, d)
				if !ok {
					st.lost++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	st.wall = time.Since(start)
	return st
}

func mixedCall(cs *mcp.ClientSession, i, n int) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tag := fmt.Sprintf("c%d-%d", i, n)
	run := func(lang, code string) bool {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"language": lang, "code": code}})
		if err != nil || res.IsError {
			return false
		}
		m, _ := res.StructuredContent.(map[string]any)
		return m["stdout"] == tag+"\n"
	}
	switch n % 4 {
	case 0:
		return run("bash", "echo "+tag)
	case 1:
		res, err := cs.ListTools(ctx, nil)
		return err == nil && len(res.Tools) > 0
	case 2:
		return run("python", "print('"+tag+"')")
	default:
		return cs.Ping(ctx, nil) == nil
	}
}

func (st loadStats) report(b *testing.B, name string) {
	s := append([]time.Duration(nil), st.lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	p := func(q float64) float64 { return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000 }
	b.ReportMetric(p(0.50), name+"-p50-ms")
	b.ReportMetric(p(0.99), name+"-p99-ms")
	b.ReportMetric(float64(len(s))/st.wall.Seconds(), name+"-calls/s")
	b.ReportMetric(float64(st.lost), name+"-lost")
}

// BenchmarkLoadHTTPvsStdio drives the same mixed load — 50 concurrent
// clients, 2,000 calls in total — through one server over Streamable HTTP
// (50 sessions on loopback) and through one over stdio (50 goroutines on
// the single stdio session), and reports p50/p99 latency, throughput and
// lost calls for each plus the HTTP/stdio throughput ratio. It fails if any
// call is lost, or if the HTTP server's goroutines do not return to their
// baseline once the clients have gone; RSS before/after is reported.
//
//	go test ./internal/e2e/ -run '^$' -bench LoadHTTPvsStdio -benchtime 1x
func BenchmarkLoadHTTPvsStdio(b *testing.B) {
	for b.Loop() {
		h := loadHTTP(b)
		st := loadStdio(b)
		b.ReportMetric((float64(len(h.lat))/h.wall.Seconds())/(float64(len(st.lat))/st.wall.Seconds()), "http/stdio-throughput")
		if h.lost+st.lost > 0 {
			b.Errorf("lost calls: http %d, stdio %d", h.lost, st.lost)
		}
	}
}

func loadHTTP(b *testing.B) loadStats {
	s := startHTTP(b, "", "CODEXEC_MAX_SESSIONS=100")
	warm := s.mustConnect("")
	if !mixedCall(warm, 0, 0) || !mixedCall(warm, 0, 2) {
		b.Fatal("warm-up failed")
	}
	_ = warm.Close()
	waitMetric(b, s, "codexec_mcp_sessions", 0)
	baseG, baseRSS, baseHeap := s.metric("go_goroutines"), s.metric("process_resident_memory_bytes"), s.metric("go_memstats_heap_inuse_bytes")
	sessions := make([]*mcp.ClientSession, loadClients)
	for i := range sessions {
		sessions[i] = s.mustConnect("")
	}
	st := runLoad(func(i int) *mcp.ClientSession { return sessions[i] })
	st.report(b, "http")
	for _, cs := range sessions {
		_ = cs.Close()
	}
	waitMetric(b, s, "codexec_mcp_sessions", 0)
	var afterG float64
	deadline := time.Now().Add(15 * time.Second)
	for afterG = s.metric("go_goroutines"); afterG > baseG+2 && time.Now().Before(deadline); afterG = s.metric("go_goroutines") {
		time.Sleep(200 * time.Millisecond)
	}
	afterRSS := s.metric("process_resident_memory_bytes")
	b.ReportMetric(baseG, "http-goroutines-before")
	b.ReportMetric(afterG, "http-goroutines-after")
	b.ReportMetric(baseRSS/(1<<20), "http-rss-before-MB")
	b.ReportMetric(afterRSS/(1<<20), "http-rss-after-MB")
	// RSS keeps freed heap until the runtime scavenges it; live heap shows
	// whether anything was actually retained.
	b.ReportMetric(baseHeap/(1<<20), "http-heap-before-MB")
	b.ReportMetric(s.metric("go_memstats_heap_inuse_bytes")/(1<<20), "http-heap-after-MB")
	if afterG > baseG+2 {
		b.Errorf("goroutines did not return to baseline: %v before, %v after", baseG, afterG)
	}
	return st
}

func loadStdio(b *testing.B) loadStats {
	s := start(b, "CODEXEC_MAX_SESSIONS=100")
	if !mixedCall(s.Session, 0, 0) || !mixedCall(s.Session, 0, 2) {
		b.Fatal("warm-up failed")
	}
	before := rssMB(s.Cmd.Process.Pid)
	st := runLoad(func(int) *mcp.ClientSession { return s.Session })
	st.report(b, "stdio")
	b.ReportMetric(before, "stdio-rss-before-MB")
	b.ReportMetric(rssMB(s.Cmd.Process.Pid), "stdio-rss-after-MB")
	return st
}

func waitMetric(b *testing.B, s *httpServer, series string, want float64) {
	deadline := time.Now().Add(15 * time.Second)
	for s.metric(series) != want {
		if time.Now().After(deadline) {
			b.Fatalf("%s stayed at %v, want %v", series, s.metric(series), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rssMB reads VmRSS of pid from /proc.
func rssMB(pid int) float64 { return statusMB(pid, "VmRSS") }

// statusMB reads a kB field of /proc/pid/status (VmRSS, RssAnon…) in MB,
// or -1 if there is none.
func statusMB(pid int, field string) float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return -1
}
