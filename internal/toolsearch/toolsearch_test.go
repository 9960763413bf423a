package toolsearch

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTokens(t *testing.T) {
	cases := map[string][]string{
		"listCommits":               {"list", "commit"},
		"list_commits":              {"list", "commit"},
		"get-sum":                   {"get", "sum"},
		"HTTPServer entries":        {"http", "server", "entry"},
		"Create the new Files":      {"creat", "new", "file"},
		"created deleting searches": {"creat", "delet", "search"},
		"running a 2nd job":         {"run", "2nd", "job"},
	}
	for in, want := range cases {
		if diff := cmp.Diff(want, Tokens(in)); diff != "" {
			t.Errorf("Tokens(%q) (-want +got):\n%s", in, diff)
		}
	}
}

func TestSearchRanksByFieldWeight(t *testing.T) {
	ix := New([]Doc{
		{ID: "gh.list_commits", Fields: []Field{{"list_commits", 3}, {"List commits of a repository branch", 1}}},
		{ID: "gh.list_issues", Fields: []Field{{"list_issues", 3}, {"List issues of a repository", 1}}},
		{ID: "fs.read_file", Fields: []Field{{"read_file", 3}, {"Read a file; mentions commits once", 1}}},
		{ID: "mem.delete_entities", Fields: []Field{{"delete_entities", 3}, {"Delete entities from the graph", 1}}},
	})
	cases := []struct {
		q    string
		want string
	}{
		{"Analyze GitHub commits from last week", "gh.list_commits"},
		{"show open issues", "gh.list_issues"},
		{"remove some entities", "mem.delete_entities"},
		{"read the contents of a file", "fs.read_file"},
	}
	for _, c := range cases {
		hits := ix.Search(c.q, 2)
		if len(hits) == 0 || hits[0].ID != c.want {
			t.Errorf("%q: %+v, want %s first", c.q, hits, c.want)
		}
	}
	if hits := ix.Search("zebra", 5); len(hits) != 0 {
		t.Errorf("unrelated query matched %+v", hits)
	}
}
