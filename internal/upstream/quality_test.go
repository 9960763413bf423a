package upstream

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// TestRankingQuality measures recall@5 of the intent ranking over the tools
// of the three npm servers the e2e tests use plus a synthetic catalogue of
// 200+ tools of common services (testdata/synthetic_tools.json), on a
// labelled set of intents (testdata/intents.json). An intent counts as a
// hit when one of its acceptable tools is in the top 5. Goal: ≥ 0.9.
func TestRankingQuality(t *testing.T) {
	var cat []Tool
	for _, f := range []string{"testdata/npm_servers_tools.json", "testdata/synthetic_tools.json"} {
		var part []Tool
		readJSON(t, f, &part)
		cat = append(cat, part...)
	}
	var intents []struct {
		Intent string
		Want   []string
	}
	readJSON(t, "testdata/intents.json", &intents)
	if len(cat) < 237 || len(intents) < 40 {
		t.Fatalf("catalogue %d tools, %d intents: too small", len(cat), len(intents))
	}
	hits, top1 := 0, 0
	for _, in := range intents {
		got := Rank(cat, in.Intent, 5)
		var ids []string
		for _, g := range got {
			ids = append(ids, g.Server+"."+g.Name)
		}
		if slices.ContainsFunc(ids, func(id string) bool { return slices.Contains(in.Want, id) }) {
			hits++
		} else {
			t.Logf("miss: %q → %v (want one of %v)", in.Intent, ids, in.Want)
		}
		if len(ids) > 0 && slices.Contains(in.Want, ids[0]) {
			top1++
		}
	}
	recall := float64(hits) / float64(len(intents))
	t.Logf("recall@5 = %.3f (%d/%d intents), top-1 = %.3f, catalogue %d tools", recall, hits, len(intents), float64(top1)/float64(len(intents)), len(cat))
	if recall < 0.9 {
		t.Errorf("recall@5 %.3f below the 0.9 goal", recall)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
