package toolsearch

import (
	"encoding/json"
	"os"
	"slices"
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
		names, descs := ParamText(t.InputSchema)
		docs[i] = Doc{ID: t.Server + "." + t.Name, Name: t.Name, Title: t.Title, Server: t.Server,
			Description: t.Description, Params: names, ParamDocs: descs, Hints: Hints{
				ReadOnly: hint(t.Annotations, "readOnlyHint"), Destructive: hint(t.Annotations, "destructiveHint"),
				Idempotent: hint(t.Annotations, "idempotentHint"), OpenWorld: hint(t.Annotations, "openWorldHint"),
			}}
	}
	return docs
}

func hint(a map[string]any, k string) *bool {
	if b, ok := a[k].(bool); ok {
		return &b
	}
	return nil
}

// evaluation is one pass of every intent through an index.
type evaluation struct {
	hits   int
	misses []string
	times  []time.Duration
}

func evaluate(tb testing.TB, ix *Index, intents []intent) evaluation {
	var ev evaluation
	for _, in := range intents {
		start := time.Now()
		got, err := ix.Search(in.Intent, 5)
		ev.times = append(ev.times, time.Since(start))
		if err != nil {
			tb.Fatalf("%q: %v", in.Intent, err)
		}
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
	ix := newIndex(t, corpusDocs(tools))
	ev := evaluate(t, ix, intents)
	for _, m := range ev.misses {
		t.Logf("miss: %s", m)
	}
	t.Logf("recall@5 = %.3f (%d/%d intents) over %d tools", ev.recall(), ev.hits, len(intents), len(tools))
	if ev.recall() < 0.95 {
		t.Errorf("recall@5 %.3f is below 0.95", ev.recall())
	}
}

// TestKnowledgeGraphIntent: a program that stores entities and reads the
// graph back needs create_entities, add_observations and read_graph bound,
// and no delete tool may push them out of the default top 5.
func TestKnowledgeGraphIntent(t *testing.T) {
	tools, _ := loadCorpus(t)
	for _, set := range []struct {
		name string
		keep func(corpusTool) bool
	}{
		{"whole corpus", func(corpusTool) bool { return true }},
		{"everything+memory+filesystem", func(c corpusTool) bool {
			return c.Server == "memory" || c.Server == "everything" || c.Server == "filesystem"
		}},
	} {
		var sub []corpusTool
		for _, c := range tools {
			if set.keep(c) {
				sub = append(sub, c)
			}
		}
		hits, err := newIndex(t, corpusDocs(sub)).Search("store entities in the knowledge graph memory and read the graph back", 5)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.ID)
		}
		for _, want := range []string{"memory.create_entities", "memory.add_observations", "memory.read_graph"} {
			if !slices.Contains(ids, want) {
				t.Errorf("%s: top 5 %v lacks %s", set.name, ids, want)
			}
		}
		for _, id := range ids {
			if strings.Contains(id, ".delete_") {
				t.Errorf("%s: top 5 %v has a delete tool", set.name, ids)
			}
		}
	}
}

func newIndex(tb testing.TB, docs []Doc) *Index {
	tb.Helper()
	ix, err := New(docs)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ix.Close() })
	return ix
}

// BenchmarkSearch searches every intent per iteration and reports recall@5
// and the median latency of one search.
func BenchmarkSearch(b *testing.B) {
	tools, intents := loadCorpus(b)
	ix := newIndex(b, corpusDocs(tools))
	var all evaluation
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev := evaluate(b, ix, intents)
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
		ix, err := New(docs)
		if err != nil {
			b.Fatal(err)
		}
		ix.Close()
	}
}
