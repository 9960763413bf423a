package toolsearch

import (
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// corpusTool is one tool of testdata/servers.json (real npm servers'
// tools/list) or testdata/noise.json (generated).
type corpusTool struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations map[string]any  `json:"annotations"`
}

// intent is a task as people phrase it and the tools that do it.
type intent struct {
	Intent string   `json:"intent"`
	Want   []string `json:"want"`
}

func loadCorpus(tb testing.TB) ([]corpusTool, []intent) {
	tb.Helper()
	var tools []corpusTool
	for _, f := range []string{"testdata/servers.json", noisePath} {
		var part []corpusTool
		readJSON(tb, f, &part)
		tools = append(tools, part...)
	}
	var intents []intent
	readJSON(tb, "testdata/intents.json", &intents)
	if len(tools) < 500 || len(intents) < 60 {
		tb.Fatalf("corpus has %d tools and %d intents; want ≥ 500 and ≥ 60", len(tools), len(intents))
	}
	return tools, intents
}

func readJSON(tb testing.TB, path string, v any) {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
}

// corpusDocs indexes the corpus the way upstream.Doc indexes live tools.
func corpusDocs(tools []corpusTool) []Doc {
	docs := make([]Doc, len(tools))
	for i, t := range tools {
		names, descs := paramText(t.InputSchema)
		docs[i] = Doc{ID: t.Server + "." + t.Name, Fields: []Field{
			{Text: t.Name, Weight: 3}, {Text: t.Title, Weight: 2}, {Text: t.Server, Weight: 1.5},
			{Text: t.Description, Weight: 1}, {Text: names, Weight: 1}, {Text: descs, Weight: 0.5},
		}}
	}
	return docs
}

func paramText(schema json.RawMessage) (names, descs string) {
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	var n, d []string
	for k, p := range s.Properties {
		n, d = append(n, k), append(d, p.Description)
	}
	sort.Strings(n)
	sort.Strings(d)
	return strings.Join(n, " "), strings.Join(d, " ")
}

// evaluation is one pass of every intent through an index.
type evaluation struct {
	hits   int
	misses []string
	times  []time.Duration
}

func evaluate(ix *Index, intents []intent) evaluation {
	var ev evaluation
	for _, in := range intents {
		start := time.Now()
		got := ix.Search(in.Intent, 5)
		ev.times = append(ev.times, time.Since(start))
		var ids []string
		for _, h := range got {
			ids = append(ids, h.ID)
		}
		if slices.ContainsFunc(ids, func(id string) bool { return slices.Contains(in.Want, id) }) {
			ev.hits++
		} else {
			ev.misses = append(ev.misses, in.Intent+" → "+strings.Join(ids, ", ")+" (want "+strings.Join(in.Want, " or ")+")")
		}
	}
	return ev
}

func (ev evaluation) recall() float64 { return float64(ev.hits) / float64(ev.hits+len(ev.misses)) }

// p50 is the median search time.
func (ev evaluation) p50() time.Duration {
	ts := slices.Clone(ev.times)
	slices.Sort(ts)
	return ts[len(ts)/2]
}

// TestRecall measures recall@5 over the corpus: an intent is a hit when one
// of its tools is among the first 5 results.
func TestRecall(t *testing.T) {
	tools, intents := loadCorpus(t)
	ix := New(corpusDocs(tools))
	ev := evaluate(ix, intents)
	for _, m := range ev.misses {
		t.Logf("miss: %s", m)
	}
	t.Logf("recall@5 = %.3f (%d/%d intents) over %d tools", ev.recall(), ev.hits, len(intents), len(tools))
}

// BenchmarkSearch searches every intent per iteration and reports recall@5
// and the median latency of one search.
func BenchmarkSearch(b *testing.B) {
	tools, intents := loadCorpus(b)
	ix := New(corpusDocs(tools))
	var all evaluation
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev := evaluate(ix, intents)
		all.hits, all.misses = ev.hits, ev.misses
		all.times = append(all.times, ev.times...)
	}
	b.ReportMetric(all.recall(), "recall@5")
	b.ReportMetric(float64(all.p50().Microseconds()), "p50-µs/search")
	b.ReportMetric(float64(len(tools)), "tools")
}

// BenchmarkBuild is the cost of indexing the corpus (paid again when an
// upstream's tool list changes).
func BenchmarkBuild(b *testing.B) {
	tools, _ := loadCorpus(b)
	docs := corpusDocs(tools)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		New(docs)
	}
}
