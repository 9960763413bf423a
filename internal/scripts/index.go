package scripts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// indexEntry is one script in index.json. Stamp fingerprints the files it
// was read from (size and mtime of code and metadata) so a hand edit is
// noticed without re-reading every file on every call.
type indexEntry struct {
	Meta
	File  string `json:"file"`
	Stamp string `json:"stamp"`
}

type indexDoc struct {
	Scripts []indexEntry `json:"scripts"`
}

// scanLocked reconciles index.json with the script directories and returns
// the current entries sorted by name. index.json is rewritten (atomically)
// only when it disagrees with the directories. s.mu must be held.
func (s *Store) scanLocked() ([]indexEntry, error) {
	cached := map[string]indexEntry{}
	var doc indexDoc
	if b, err := os.ReadFile(filepath.Join(s.root, indexFile)); err == nil && json.Unmarshal(b, &doc) == nil {
		for _, e := range doc.Scripts {
			cached[e.Name] = e
		}
	}
	ents, err := os.ReadDir(s.root)
	if err != nil {
		return nil, fmt.Errorf("scripts: %w", err)
	}
	var out []indexEntry
	changed := len(doc.Scripts) == 0 && !isFile(filepath.Join(s.root, indexFile))
	for _, de := range ents {
		if !de.IsDir() || ValidateName(de.Name()) != nil {
			continue
		}
		e, ok := s.entry(de.Name(), cached[de.Name()])
		if !ok {
			continue
		}
		if c, had := cached[e.Name]; !had || c.Stamp != e.Stamp {
			changed = true
		}
		out = append(out, e)
	}
	if len(out) != len(doc.Scripts) {
		changed = true
	}
	if changed {
		b, _ := json.MarshalIndent(indexDoc{Scripts: nonNilEntries(out)}, "", "  ")
		if err := writeFileAtomic(filepath.Join(s.root, indexFile), append(b, '\n')); err != nil {
			return nil, fmt.Errorf("scripts: write index: %w", err)
		}
	}
	return out, nil
}

// entry returns the index entry for one directory, reusing the cached one
// when the files' stamp is unchanged.
func (s *Store) entry(name string, cached indexEntry) (indexEntry, bool) {
	dir := filepath.Join(s.root, name)
	code, _ := findCode(dir, cached.Language)
	if code == "" {
		return indexEntry{}, false
	}
	stamp := stampOf(code) + "|" + stampOf(filepath.Join(dir, metaFile))
	if cached.Stamp == stamp && cached.File == filepath.Base(code) {
		return cached, true
	}
	sc, err := readScript(dir, name)
	if err != nil {
		return indexEntry{}, false
	}
	return indexEntry{Meta: sc.Meta, File: filepath.Base(sc.Path), Stamp: stamp}, true
}

func stampOf(p string) string {
	fi, err := os.Stat(p)
	if err != nil {
		return "-"
	}
	return fmt.Sprintf("%d@%d", fi.Size(), fi.ModTime().UnixNano())
}

func nonNilEntries(e []indexEntry) []indexEntry {
	if e == nil {
		return []indexEntry{}
	}
	return e
}

// List returns the metadata of every script, optionally filtered by
// canonical language and by tag (case-insensitive), sorted by name.
func (s *Store) List(lang, tag string) ([]Meta, error) {
	s.mu.Lock()
	ents, err := s.scanLocked()
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	all := make([]Meta, len(ents))
	for i, e := range ents {
		all[i] = e.Meta
	}
	return Filter(all, lang, tag), nil
}

// Match is one search_scripts hit. Relevance names the strongest field that
// matched: name_match, tag_match, description_match or language_match.
type Match struct {
	Meta
	Relevance string
	Score     int
}

// Search finds scripts whose name, tags, description or language contain
// any word of query (case-insensitive substring), best first: a word in the
// name weighs 8, in a tag 4, in the description 2, the language 1.
func (s *Store) Search(query string) ([]Match, error) {
	if len(tokens(query)) == 0 {
		return Rank(nil, query)
	}
	all, err := s.List("", "")
	if err != nil {
		return nil, err
	}
	return Rank(all, query)
}

func scoreOf(m Meta, words []string) (int, string) {
	fields := []struct {
		rel    string
		weight int
		text   string
	}{
		{"name_match", 8, strings.ToLower(m.Name)},
		{"tag_match", 4, strings.ToLower(strings.Join(m.Tags, " "))},
		{"description_match", 2, strings.ToLower(m.Description)},
		{"language_match", 1, m.Language},
	}
	score, best, rel := 0, 0, ""
	for _, f := range fields {
		for _, w := range words {
			if strings.Contains(f.text, w) {
				score += f.weight
				if f.weight > best {
					best, rel = f.weight, f.rel
				}
			}
		}
	}
	return score, rel
}
