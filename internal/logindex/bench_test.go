package logindex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/execlog"
)

// The history benchmark generates -history executions (default 1,000,000)
// as daily JSONL files in -historydir (default: a temp dir, removed after),
// builds the index from scratch, then times queries. It only runs under
// -bench, e.g.:
//
//	go test ./internal/logindex/ -run '^$' -bench History -benchtime 200x -timeout 60m
var (
	historyN   = flag.Int("history", 1_000_000, "executions in the generated history for BenchmarkHistory")
	historyDir = flag.String("historydir", "", "reuse/keep the generated history here (default: temp dir)")
)

// TestMain removes the generated history unless -historydir keeps it.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchIdx != nil {
		_ = benchIdx.Close()
	}
	if benchTemp {
		_ = os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

var (
	benchTemp bool
	benchOnce sync.Once
	benchIdx  *Index
	benchIDs  []string
	benchDir  string
	benchErr  error
)

// words is a synthetic vocabulary; indices are drawn Zipf-distributed so a
// few words are very common and most are rare, as in real code and output.
var words = func() []string {
	base := []string{"import", "pandas", "numpy", "print", "def", "return", "for", "in", "range", "json", "requests",
		"read_csv", "describe", "console", "log", "echo", "grep", "ModuleNotFoundError", "TypeError", "ValueError"}
	for i := 0; len(base) < 20000; i++ {
		base = append(base, fmt.Sprintf("w%x", i*2654435761%1000003))
	}
	return base
}()

func sentence(r *rand.Rand, z *rand.Zipf, n int) string {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[z.Uint64()])
	}
	return b.String()
}

// generate writes n executions spread over the last 80 days; ~20% fail,
// ~2% time out; languages rotate.
func generate(dir string, n int) ([]string, error) {
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.1, 1, uint64(len(words)-1))
	now := time.Now().UTC()
	langs := []string{"python", "node", "bash", "typescript"}
	files := map[string]*bufio.Writer{}
	var handles []*os.File
	ids := make([]string, 0, n)
	for i := 0; i < n; i++ {
		at := now.Add(-time.Duration(n-i) * (80 * 24 * time.Hour / time.Duration(n)))
		e := execlog.Entry{Type: "execution", ExecutionID: fmt.Sprintf("exec_%012x", i), Language: langs[i%4],
			Code: sentence(r, z, 25), Stdout: sentence(r, z, 15), ExitCode: new(int), Status: "success",
			DurationMs: int64(r.IntN(5000)), SandboxMode: "subprocess", ExecutedAt: at}
		switch p := r.IntN(100); {
		case p < 2:
			e.Status, e.TimedOut, e.ExitCode = "timeout", true, nil
		case p < 22:
			e.Status, e.Stderr = "execution_error", "Traceback\n"+words[17+r.IntN(3)]+": "+sentence(r, z, 5)
			*e.ExitCode = 1
		}
		name := execlog.DailyFile(at)
		w := files[name]
		if w == nil {
			f, err := os.Create(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			handles = append(handles, f)
			w = bufio.NewWriterSize(f, 1<<20)
			files[name] = w
		}
		b, _ := json.Marshal(e)
		w.Write(append(b, '\n'))
		ids = append(ids, e.ExecutionID)
	}
	for _, w := range files {
		if err := w.Flush(); err != nil {
			return nil, err
		}
	}
	for _, f := range handles {
		f.Close()
	}
	return ids, nil
}

func dirSize(dir, pattern string) int64 {
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	var n int64
	for _, f := range m {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func setupHistory(b *testing.B) {
	benchOnce.Do(func() {
		benchDir = *historyDir
		if benchDir == "" {
			benchDir, benchErr = os.MkdirTemp("", "codexec-history")
			if benchErr != nil {
				return
			}
			benchTemp = true
		}
		if _, err := os.Stat(filepath.Join(benchDir, ".generated")); err != nil {
			t0 := time.Now()
			if benchIDs, benchErr = generate(benchDir, *historyN); benchErr != nil {
				return
			}
			_ = os.WriteFile(filepath.Join(benchDir, ".generated"), nil, 0o644)
			fmt.Fprintf(os.Stderr, "generated %d executions in %v, JSONL %.0f MB\n", *historyN, time.Since(t0).Round(time.Millisecond), float64(dirSize(benchDir, "*.jsonl"))/1e6)
		} else {
			for i := 0; i < *historyN; i++ {
				benchIDs = append(benchIDs, fmt.Sprintf("exec_%012x", i))
			}
		}
		t0 := time.Now()
		benchIdx, benchErr = Open(benchDir, filepath.Join(benchDir, FileName))
		if benchErr == nil {
			benchErr = benchIdx.Sync(context.Background(), true)
		}
		fmt.Fprintf(os.Stderr, "index build/catch-up: %v, index %.0f MB (incl. WAL)\n", time.Since(t0).Round(time.Millisecond),
			float64(dirSize(benchDir, FileName+"*"))/1e6)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
}

// timed runs fn b.N times and reports p50/p99 latencies in ms.
func timed(b *testing.B, fn func(i int)) {
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		fn(i)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

func BenchmarkHistory(b *testing.B) {
	setupHistory(b)
	ctx := context.Background()
	since := time.Now().UTC().AddDate(0, 0, -7)
	queries := []struct {
		name string
		q    Query
	}{
		{"NoFilter", Query{}},
		{"StatusFailed", Query{Status: "failed"}},
		{"LangPythonTimeout", Query{Language: "python", Status: "timeout"}},
		{"Since7d", Query{Since: since}},
		{"TextRare", Query{Text: words[5000]}},
		{"TextCommon", Query{Text: "pandas"}},
		{"TextTwoWords", Query{Text: "pandas describe"}},
		{"TextError+Failed+Python", Query{Text: "ModuleNotFoundError", Status: "failed", Language: "python"}},
	}
	for _, c := range queries {
		b.Run("Search/"+c.name, func(b *testing.B) {
			var total int
			timed(b, func(int) {
				hits, n, err := benchIdx.Search(ctx, c.q)
				if err != nil || (n > 0 && len(hits) == 0) {
					b.Fatal(err, n)
				}
				total = n
			})
			b.ReportMetric(float64(total), "matches")
		})
	}
	b.Run("GetByID", func(b *testing.B) {
		r := rand.New(rand.NewPCG(3, 4))
		timed(b, func(int) {
			id := benchIDs[r.IntN(len(benchIDs))]
			if e, err := benchIdx.Get(ctx, id); err != nil || e.ExecutionID != id {
				b.Fatal(err)
			}
		})
	})
	// Baseline: seed 000's MVP, a sequential scan of every JSONL file with
	// in-memory filtering, for the TextRare query.
	b.Run("BaselineSequentialScan/TextRare", func(b *testing.B) {
		word := []byte(words[5000])
		timed(b, func(int) {
			n := 0
			files, _ := filepath.Glob(filepath.Join(benchDir, "*.jsonl"))
			for _, f := range files {
				fh, _ := os.Open(f)
				sc := bufio.NewScanner(fh)
				sc.Buffer(make([]byte, 1<<20), 1<<26)
				for sc.Scan() {
					if !bytes.Contains(sc.Bytes(), word) {
						continue
					}
					var e execlog.Entry
					if json.Unmarshal(sc.Bytes(), &e) == nil {
						n++
					}
				}
				fh.Close()
			}
		})
	})
}
