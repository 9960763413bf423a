package pgstore

import (
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// The embedded index (SQLite FTS5, tokenizer unicode61 with '_' as a token
// character) and this store must split text into the same words, or the same
// query would find different executions. PostgreSQL's own text parser does
// not (it splits at '_', keeps "a-b" and "1.2" whole, knows e-mail
// addresses), so words are made here, by the unicode61 rules, and handed to
// PostgreSQL as ready lexemes: array_to_tsvector for the entries, a quoted
// tsquery for the searches. PostgreSQL then does the full-text matching,
// with its GIN index.

// isWordRune is unicode61's token character class: letters, numbers,
// private-use characters, and '_' (added as a tokenchar by the index).
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r) || r == '_'
}

// fold is unicode61's case folding and removal of diacritics: lower case,
// then the combining marks that the canonical decomposition puts on Latin
// letters dropped (unicode61 folds only Latin: "á" is "a", Greek "ά" stays).
func fold(w string) string {
	w = strings.ToLower(w)
	if isASCII(w) {
		return w
	}
	var b strings.Builder
	latin := false
	for _, r := range norm.NFD.String(w) {
		if unicode.Is(unicode.Mn, r) {
			if !latin {
				b.WriteRune(r)
			}
			continue
		}
		latin = unicode.Is(unicode.Latin, r)
		b.WriteRune(r)
	}
	return norm.NFC.String(b.String())
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// maxLexeme is PostgreSQL's longest lexeme, in bytes; longer words are not
// indexed (a search for one finds nothing, as no one searches for them).
const maxLexeme = 2046

// lexemeBudget keeps one entry's tsvector under PostgreSQL's 1 MB cap
// (each lexeme costs its bytes plus a few of bookkeeping); words beyond it,
// in an output with hundreds of thousands of distinct words, are not
// indexed.
const lexemeBudget = 900 << 10

// lexemes returns the distinct words of texts, folded and sorted.
func lexemes(texts ...string) []string {
	seen := map[string]bool{}
	for _, t := range texts {
		for _, w := range strings.FieldsFunc(t, func(r rune) bool { return !isWordRune(r) }) {
			if w = fold(w); w != "" && len(w) <= maxLexeme {
				seen[w] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for w := range seen {
		out = append(out, w)
	}
	slices.Sort(out)
	size := 0
	for i, w := range out {
		if size += len(w) + 8; size > lexemeBudget {
			return out[:i]
		}
	}
	return out
}

// tsquery turns free text into a tsquery requiring every word, with
// logindex.MatchExpr's idea of a word, each folded into lexemes as the
// index would; "" when it has none PostgreSQL can hold (a text of only
// over-long words matches nothing).
func tsquery(text string) string {
	var terms []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
	}) {
		for _, l := range lexemes(w) {
			terms = append(terms, "'"+l+"'") // words hold no quote or backslash
		}
	}
	return strings.Join(terms, " & ")
}
