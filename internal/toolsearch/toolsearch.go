// Package toolsearch ranks tools for a natural-language intent: BM25 over
// weighted fields (name, title, description, parameter names and
// descriptions, server), with tokens split at snake_case, kebab-case and
// camelCase boundaries, stop words dropped and a light suffix stemmer. It is
// an honest lexical ranker: no model, no network, built in microseconds.
//
// An Index is immutable after New and safe for concurrent use.
package toolsearch

import (
	"math"
	"sort"
	"strings"
	"unicode"
)

// Field is a piece of a document's text with its weight (a name counts more
// than a parameter description).
type Field struct {
	Text   string
	Weight float64
}

// Doc is one searchable item.
type Doc struct {
	ID     string
	Fields []Field
}

// Hit is a ranked result.
type Hit struct {
	ID    string
	Score float64
}

// BM25 parameters (the usual values).
const (
	k1 = 1.2
	b  = 0.75
)

// Index is a BM25 index over documents.
type Index struct {
	ids    []string
	tf     []map[string]float64
	length []float64
	avgLen float64
	idf    map[string]float64
}

// New indexes docs.
func New(docs []Doc) *Index {
	ix := &Index{idf: map[string]float64{}}
	df := map[string]int{}
	total := 0.0
	for _, d := range docs {
		tf := map[string]float64{}
		n := 0.0
		for _, f := range d.Fields {
			for _, t := range Tokens(f.Text) {
				tf[t] += f.Weight
				n += f.Weight
			}
		}
		for t := range tf {
			df[t]++
		}
		ix.ids, ix.tf, ix.length = append(ix.ids, d.ID), append(ix.tf, tf), append(ix.length, n)
		total += n
	}
	if len(docs) > 0 {
		ix.avgLen = total / float64(len(docs))
	}
	N := float64(len(docs))
	for t, n := range df {
		ix.idf[t] = math.Log(1 + (N-float64(n)+0.5)/(float64(n)+0.5))
	}
	return ix
}

// Len is the number of indexed documents.
func (ix *Index) Len() int { return len(ix.ids) }

// Search returns at most k documents with a positive score for query, best
// first (ties by ID). k <= 0 means all.
func (ix *Index) Search(query string, k int) []Hit {
	terms := queryTerms(query)
	var hits []Hit
	for i, tf := range ix.tf {
		s := 0.0
		for t, qw := range terms {
			f := tf[t]
			if f == 0 {
				continue
			}
			norm := k1 * (1 - b + b*ix.length[i]/ix.avgLen)
			s += qw * ix.idf[t] * f * (k1 + 1) / (f + norm)
		}
		if s > 0 {
			hits = append(hits, Hit{ID: ix.ids[i], Score: s})
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
	if k > 0 && len(hits) > k {
		hits = hits[:k]
	}
	return hits
}

// queryTerms weighs the query's tokens: 1 for each word, plus a lower
// weight for a few generic software synonyms (so "remove" finds delete_*).
func queryTerms(q string) map[string]float64 {
	out := map[string]float64{}
	for _, t := range Tokens(q) {
		out[t] = 1
	}
	for t := range out {
		for _, s := range synonyms[t] {
			if _, ok := out[s]; !ok {
				out[s] = 0.5
			}
		}
	}
	return out
}

// Tokens splits text into lowercase stemmed terms without stop words:
// "listCommits", "list_commits" and "list-commits" all give [list commit].
func Tokens(s string) []string {
	var out []string
	for _, w := range words(s) {
		w = strings.ToLower(w)
		if stop[w] || len(w) < 2 && !unicode.IsDigit(rune(w[0])) {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

// words splits at non-alphanumerics and at lower→upper case changes
// (and at the end of an acronym: "HTTPServer" → HTTP, Server).
func words(s string) []string {
	var out []string
	rs := []rune(s)
	start := -1
	flush := func(i int) {
		if start >= 0 && i > start {
			out = append(out, string(rs[start:i]))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start >= 0 && unicode.IsUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || unicode.IsUpper(prev) && nextLower {
				flush(i)
			}
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(rs))
	return out
}

// stem strips common English suffixes so inflections meet: entries→entry,
// files→file, created→creat, create→creat, listing→list.
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		w = w[:len(w)-3] + "y"
	case len(w) > 4 && strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		w = undouble(w[:len(w)-3])
	case len(w) > 4 && strings.HasSuffix(w, "ed"):
		w = undouble(w[:len(w)-2])
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us"):
		w = w[:len(w)-1]
	}
	if len(w) > 4 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	return w
}

// undouble turns "runn" into "run" (after stripping -ing/-ed).
func undouble(w string) string {
	n := len(w)
	if n > 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeioulsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

var stop = map[string]bool{}

// synonyms maps a stemmed query term to stemmed terms tools commonly use
// for the same action or object. Generic software vocabulary only.
var synonyms = map[string][]string{}

func init() {
	for _, w := range strings.Fields(`a an the of to for in on at by with from into and or is are be been was were this that
		these those it its as me my i we our you your please some any all can could would should will just then than
		which what how do does did so if about using use via up out`) {
		stop[w] = true
	}
	groups := [][]string{
		{"delete", "remove", "erase", "drop", "destroy", "purge"},
		{"create", "add", "make", "new", "insert", "register"},
		{"get", "fetch", "retrieve", "read", "show", "view", "load", "open", "lookup"},
		{"list", "enumerate", "browse", "all"},
		{"search", "find", "query", "lookup", "locate", "match"},
		{"update", "edit", "modify", "change", "patch", "set", "rename"},
		{"send", "post", "publish", "notify", "message"},
		{"write", "save", "store", "put", "persist"},
		{"run", "execute", "trigger", "start", "launch", "invoke"},
		{"stop", "cancel", "halt", "abort", "kill"},
		{"directory", "folder", "dir"},
		{"file", "document", "doc"},
		{"user", "member", "account", "person", "people"},
		{"issue", "ticket", "bug"},
		{"commit", "change", "revision"},
		{"sum", "add", "total", "plus"},
		{"echo", "repeat"},
		{"email", "mail"},
		{"image", "picture", "photo"},
		{"entity", "node"},
		{"relation", "relationship", "link", "edge"},
		{"observation", "fact", "note"},
		{"move", "rename", "relocate"},
		{"size", "bytes"},
		{"metadata", "info", "detail", "stat"},
	}
	for _, g := range groups {
		stems := make([]string, len(g))
		for i, w := range g {
			stems[i] = stem(w)
		}
		for _, a := range stems {
			for _, s := range stems {
				if s != a && !contains(synonyms[a], s) {
					synonyms[a] = append(synonyms[a], s)
				}
			}
		}
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
