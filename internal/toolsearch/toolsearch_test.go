package toolsearch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormalize(t *testing.T) {
	cases := map[string]string{
		"listCommits":        "listcommits list commits",
		"list_commits":       "list commits",
		"get-sum":            "get sum",
		"HTTPServer entries": "httpserver http server entries",
		"GitHub repo":        "github git hub repo",
		"puppeteer_navigate": "puppeteer navigate",
		"":                   "",
	}
	for in, want := range cases {
		if diff := cmp.Diff(want, normalize(in)); diff != "" {
			t.Errorf("normalize(%q) (-want +got):\n%s", in, diff)
		}
	}
}

func TestParseQuery(t *testing.T) {
	const del, dst = deletePenalty, destructivePenalty
	cases := []struct {
		in   string
		want query
	}{
		{"store entities in the graph", query{`"store" OR "entities" OR "graph"`, []string{"stor", "entity", "graph"}, del, dst, readOnlyPenalty, 1}},
		{"store entities and read the graph back", query{`"store" OR "entities" OR "read" OR "graph" OR "back"`,
			[]string{"stor", "entity", "read", "graph", "back"}, del, dst, 1, 1}},
		{"read the graph", query{`"read" OR "graph"`, []string{"read", "graph"}, del, dst, 1, writePenalty}},
		{"show notes.md", query{`"show" OR "notes" OR "md" OR "file"`, []string{"show", "note", "md", "file"}, del, dst, 1, writePenalty}},
		{"go to https://example.com", query{`"go" OR "https" OR "example" OR "com"`, []string{"go", "http", "exampl", "com"}, del, dst, 1, 1}},
		{"remove the OLD nodes", query{`"remove" OR "old" OR "nodes"`, []string{"remov", "old", "node"}, 1, 1, 1, 1}},
		{`a "quoted" NEAR(x) AND y*`, query{`"quoted" OR "near"`, []string{"quot", "near"}, del, dst, 1, 1}},
		{"the of and", query{"", nil, del, dst, 1, 1}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, parseQuery(c.in), cmp.AllowUnexported(query{})); diff != "" {
			t.Errorf("parseQuery(%q) (-want +got):\n%s", c.in, diff)
		}
	}
}

func TestSearchRanksByFieldWeight(t *testing.T) {
	yes, no := true, false
	ix := newIndex(t, []Doc{
		{ID: "gh.list_commits", Name: "list_commits", Description: "List commits of a repository branch"},
		{ID: "gh.list_issues", Name: "list_issues", Description: "List issues of a repository"},
		{ID: "fs.read_file", Name: "read_file", Description: "Read a file; mentions commits once"},
		{ID: "mem.delete_entities", Name: "delete_entities", Description: "Delete entities from the graph",
			Hints: Hints{Destructive: &yes, ReadOnly: &no}},
		{ID: "mem.create_entities", Name: "create_entities", Description: "Create entities in the graph",
			Hints: Hints{Destructive: &no, ReadOnly: &no}},
	})
	cases := []struct {
		q    string
		want string
	}{
		{"Analyze GitHub commits from last week", "gh.list_commits"},
		{"show open issues", "gh.list_issues"},
		{"remove some entities", "mem.delete_entities"},
		{"save some entities", "mem.create_entities"},
		{"entities", "mem.create_entities"}, // a delete tool needs a delete verb
		{"read the contents of a file", "fs.read_file"},
	}
	for _, c := range cases {
		hits, err := ix.Search(c.q, 2)
		if err != nil || len(hits) == 0 || hits[0].ID != c.want {
			t.Errorf("%q: %+v %v, want %s first", c.q, hits, err, c.want)
		}
	}
	for _, q := range []string{"zebra", "", "the", `"`} {
		if hits, err := ix.Search(q, 5); len(hits) != 0 || err != nil {
			t.Errorf("%q matched %+v %v", q, hits, err)
		}
	}
	if hits, _ := ix.Search("entities", 0); len(hits) != 2 {
		t.Errorf("k=0 gave %d hits, want all 2 matches", len(hits))
	}
}

// TestSearchConcurrent: searches from many goroutines share one index and
// get the answers one goroutine gets (run with -race).
func TestSearchConcurrent(t *testing.T) {
	tools, intents := loadCorpus(t)
	ix := newIndex(t, corpusDocs(tools))
	top := func(q string) (string, error) {
		hits, err := ix.Search(q, 5)
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.ID)
		}
		return strings.Join(ids, ","), err
	}
	want := map[string]string{}
	for _, in := range intents {
		want[in.Intent], _ = top(in.Intent)
	}
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for _, in := range intents {
				if got, err := top(in.Intent); err != nil || got != want[in.Intent] {
					errs <- fmt.Errorf("%q: %s %v, alone %s", in.Intent, got, err, want[in.Intent])
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
