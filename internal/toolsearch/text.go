package toolsearch

import (
	"regexp"
	"strings"
	"unicode"
)

// normalize splits identifiers into words and lowercases them, so FTS5's
// tokenizer (which does not split camelCase) sees "list commits" for
// listCommits. A camelCase token is kept whole too ("GitHub" gives
// "github git hub"), since intents spell brand names as one word.
func normalize(s string) string {
	return strings.Join(docWords(s), " ")
}

// docWords is the lowercase words of a doc's text: each alphanumeric run,
// and its camelCase parts when it has several.
func docWords(s string) []string {
	var out []string
	for _, tok := range strings.FieldsFunc(s, notAlnum) {
		parts := words(tok)
		if len(parts) > 1 {
			out = append(out, strings.ToLower(tok))
		}
		for _, p := range parts {
			out = append(out, strings.ToLower(p))
		}
	}
	return out
}

func notAlnum(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// stems is the set of the stems of the words of texts.
func stems(texts ...string) map[string]bool {
	out := map[string]bool{}
	for _, t := range texts {
		for _, w := range docWords(t) {
			out[stem(w)] = true
		}
	}
	return out
}

// newWords is normalize(s) without the words of other: a title that only
// repeats the name would count the name twice and lengthen the row.
func newWords(s, other string) string {
	seen := map[string]bool{}
	for _, w := range words(other) {
		seen[stem(strings.ToLower(w))] = true
	}
	var out []string
	for _, w := range words(s) {
		if w = strings.ToLower(w); !seen[stem(w)] {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
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

// stem strips common English suffixes so inflections share a synonym
// entry: entities→entity, files→file, created→creat, create→creat.
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

// alternatives is the synonyms of the words of s that are not in s,
// space-separated: what a tool is also called.
func alternatives(s string) string {
	own := map[string]bool{}
	for _, w := range words(s) {
		own[strings.ToLower(w)] = true
	}
	var out []string
	seen := map[string]bool{}
	for w := range own {
		for _, g := range synonymGroups[stem(w)] {
			for _, s := range groups[g] {
				if !own[s] && !seen[s] {
					seen[s] = true
					out = append(out, s)
				}
			}
		}
	}
	return strings.Join(out, " ")
}

// hintText is the annotations as searchable words.
func hintText(h Hints) string {
	var out []string
	add := func(p *bool, yes, no string) {
		if p != nil && *p {
			out = append(out, yes)
		} else if p != nil && no != "" {
			out = append(out, no)
		}
	}
	add(h.ReadOnly, "read only", "writes")
	add(h.Destructive, "destructive", "")
	add(h.Idempotent, "idempotent", "")
	add(h.OpenWorld, "open world external", "")
	return strings.Join(out, " ")
}

// kind classifies a doc for the ranking prior (the kind* bits). A tool
// that declares no readOnlyHint is judged by its name's verb.
func kind(d Doc) int {
	k := 0
	v := nameVerb(d.Name)
	if deleteVerbs[v] {
		k |= kindDeletes
	}
	if d.Hints.Destructive != nil && *d.Hints.Destructive {
		k |= kindDestructive
	}
	if ro := d.Hints.ReadOnly; ro != nil && *ro || ro == nil && readVerbs[v] {
		k |= kindReadOnly
	}
	if ro := d.Hints.ReadOnly; ro != nil && !*ro || ro == nil && writeVerbs[v] {
		k |= kindWrites
	}
	return k
}

// nameVerb is the verb a tool's name starts with, after a server prefix
// (slack_post_message, puppeteer_click), or "".
func nameVerb(name string) string {
	ws := words(name)
	for i := 0; i < len(ws) && i < 2; i++ {
		if w := strings.ToLower(ws[i]); verbs[w] {
			return w
		}
	}
	return ""
}

// query is a parsed intent: the FTS5 MATCH expression and the prior's
// factors for each kind of tool.
type query struct {
	match                                  string
	stems                                  []string // the words' stems, for the coordination factor
	deletes, destructive, readOnly, writes float64
}

// Prior factors: a tool that deletes scores much less, and one that may
// overwrite somewhat less, unless the intent asks to delete; a read-only
// tool scores less when the intent only writes, and a writing one when it
// only reads.
const (
	deletePenalty      = 0.4
	destructivePenalty = 0.85
	readOnlyPenalty    = 0.8
	writePenalty       = 0.8
)

// fileName matches a word with a file extension ("notes.md"); url, a URL
// (whose host has dots too).
var (
	fileName = regexp.MustCompile(`\w\.[A-Za-z][A-Za-z0-9]{0,4}\b`)
	url      = regexp.MustCompile(`[a-z]+://\S*`)
)

// parseQuery turns an intent into an OR of its words (each quoted, so no
// word is taken for FTS5 syntax) and picks the prior from its verbs.
func parseQuery(s string) query {
	q := query{deletes: deletePenalty, destructive: destructivePenalty, readOnly: 1, writes: 1}
	var terms []string
	seen := map[string]bool{}
	reads, writes := false, false
	// Intents are split at non-alphanumerics only: "GitHub" stays one word.
	for _, w := range strings.FieldsFunc(s, notAlnum) {
		w = strings.ToLower(w)
		if stop[w] || seen[w] || len(w) < 2 && !unicode.IsDigit(rune(w[0])) {
			continue
		}
		seen[w] = true
		terms = append(terms, `"`+w+`"`)
		q.stems = append(q.stems, stem(w))
		switch {
		case deleteVerbs[w]:
			q.deletes, q.destructive = 1, 1
		case readVerbs[w]:
			reads = true
		case writeVerbs[w]:
			writes = true
		}
	}
	if writes && !reads {
		q.readOnly = readOnlyPenalty
	}
	if reads && !writes {
		q.writes = writePenalty
	}
	// "report.txt" names a file without saying so.
	if fileName.MatchString(url.ReplaceAllString(s, "")) && !seen["file"] {
		terms = append(terms, `"file"`)
		q.stems = append(q.stems, "file")
	}
	q.match = strings.Join(terms, " OR ")
	return q
}
