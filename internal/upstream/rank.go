package upstream

import (
	"context"
	"sync"

	"github.com/codexec/codexec/internal/toolsearch"
)

// Rank returns the k tools of the catalogue that best match query, best
// first (see toolsearch for how). The search index is kept while no
// server's tool list changed (building it costs about 0.1 s for 700 tools,
// a search under a millisecond); searches are serialised.
func (m *Manager) Rank(ctx context.Context, query string, k int) []Tool {
	gen := m.toolsGen.Load()
	tools := m.Tools(ctx)
	return m.rank.search(gen, tools, query, k)
}

// Rank returns the k tools that best match query, best first, with an
// index built for this call (Manager.Rank keeps its index).
func Rank(tools []Tool, query string, k int) []Tool {
	var c rankCache
	defer c.close()
	return c.search(0, tools, query, k)
}

// rankCache is the search index of one catalogue version.
type rankCache struct {
	mu   sync.Mutex // held for a whole search, so close never races one
	gen  uint64
	n    int // number of tools indexed; with the policy fixed, gen and n identify the catalogue
	ix   *toolsearch.Index
	byID map[string]Tool
}

func (c *rankCache) search(gen uint64, tools []Tool, query string, k int) []Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ix == nil || c.gen != gen || c.n != len(tools) {
		if err := c.build(gen, tools); err != nil {
			logger().Error("tool search index", "err", err)
			return nil
		}
	}
	hits, err := c.ix.Search(query, k)
	if err != nil {
		logger().Error("tool search", "err", err)
		return nil
	}
	out := make([]Tool, 0, len(hits))
	for _, h := range hits {
		out = append(out, c.byID[h.ID])
	}
	return out
}

// build replaces the index with one of tools.
func (c *rankCache) build(gen uint64, tools []Tool) error {
	c.closeIndex()
	docs := make([]toolsearch.Doc, len(tools))
	c.byID = make(map[string]Tool, len(tools))
	for i, t := range tools {
		docs[i] = Doc(t)
		c.byID[docs[i].ID] = t
	}
	ix, err := toolsearch.New(docs)
	if err != nil {
		return err
	}
	c.ix, c.gen, c.n = ix, gen, len(tools)
	return nil
}

func (c *rankCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeIndex()
}

func (c *rankCache) closeIndex() {
	if c.ix != nil {
		_ = c.ix.Close()
		c.ix = nil
	}
}

// Doc is how a tool is indexed for ranking (its ID is "server.tool").
func Doc(t Tool) toolsearch.Doc {
	names, descs := toolsearch.ParamText(t.InputSchema)
	d := toolsearch.Doc{ID: t.Server + "." + t.Name, Name: t.Name, Title: t.Title, Server: t.Server,
		Description: t.Description, Params: names, ParamDocs: descs}
	if a := t.Annotations; a != nil {
		d.Hints = toolsearch.Hints{ReadOnly: &a.ReadOnlyHint, Destructive: a.DestructiveHint,
			Idempotent: &a.IdempotentHint, OpenWorld: a.OpenWorldHint}
	}
	return d
}
