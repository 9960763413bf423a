package upstream

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/codexec/codexec/internal/toolsearch"
)

// Rank returns the k tools that best match query, best first. A tool's name
// counts most, then its title and server, then its description and
// parameter names, then parameter descriptions.
func Rank(tools []Tool, query string, k int) []Tool {
	docs := make([]toolsearch.Doc, len(tools))
	byID := make(map[string]Tool, len(tools))
	for i, t := range tools {
		docs[i] = Doc(t)
		byID[docs[i].ID] = t
	}
	var out []Tool
	for _, h := range toolsearch.New(docs).Search(query, k) {
		out = append(out, byID[h.ID])
	}
	return out
}

// Doc is how a tool is indexed for ranking (its ID is "server.tool").
func Doc(t Tool) toolsearch.Doc {
	names, descs := paramText(t.InputSchema)
	return toolsearch.Doc{ID: t.Server + "." + t.Name, Fields: []toolsearch.Field{
		{Text: t.Name, Weight: 3}, {Text: t.Title, Weight: 2}, {Text: t.Server, Weight: 1.5},
		{Text: t.Description, Weight: 1}, {Text: names, Weight: 1}, {Text: descs, Weight: 0.5},
	}}
}

// paramText returns a schema's top-level parameter names and their
// descriptions, space-separated.
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
