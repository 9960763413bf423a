package console

import (
	"strings"
	"unicode"
)

// token is a piece of code with its highlighting class ("" for plain).
// The template writes its text escaped, so highlighting never makes
// markup of code.
type token struct{ Class, Text string }

// maxHighlight is the largest code highlighted; longer code is shown plain.
const maxHighlight = 256 << 10

// syntax is what the highlighter knows of a language: its line comment,
// whether it has /* */ comments and `template` strings, and its keywords.
type syntax struct {
	line     string
	block    bool
	backtick bool
	keywords map[string]bool
}

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

var jsSyntax = syntax{line: "//", block: true, backtick: true, keywords: words(`async await break case catch class const continue
	default delete do else export extends false finally for from function if import in instanceof let new null of return
	super switch this throw true try typeof undefined var void while yield interface type enum implements`)}

var syntaxes = map[string]syntax{
	"python": {line: "#", keywords: words(`False None True and as assert async await break class continue def del elif else
		except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield print`)},
	"bash": {line: "#", keywords: words(`if then else elif fi for while until do done case esac function in return exit
		local export echo set`)},
	"node": jsSyntax, "javascript": jsSyntax, "typescript": jsSyntax,
}

// highlight splits code into tokens: comments, strings, numbers and
// keywords of lang, the rest plain. An unknown language, or long code,
// is one plain token.
func highlight(lang, code string) []token {
	sx, ok := syntaxes[lang]
	if !ok || len(code) > maxHighlight {
		return []token{{Text: code}}
	}
	var out []token
	for i := 0; i < len(code); {
		cls, n := sx.next(code[i:])
		if k := len(out) - 1; k >= 0 && cls == "" && out[k].Class == "" {
			out[k].Text += code[i : i+n]
		} else {
			out = append(out, token{Class: cls, Text: code[i : i+n]})
		}
		i += n
	}
	return out
}

// next is the class and length of the token s starts with.
func (sx syntax) next(s string) (string, int) {
	switch c := s[0]; {
	case strings.HasPrefix(s, sx.line):
		return "hl-comment", lineEnd(s)
	case sx.block && strings.HasPrefix(s, "/*"):
		if end := strings.Index(s[2:], "*/"); end >= 0 {
			return "hl-comment", end + 4
		}
		return "hl-comment", len(s)
	case c == '"' || c == '\'' || (c == '`' && sx.backtick):
		return "hl-string", quoted(s)
	case c >= '0' && c <= '9':
		return "hl-number", span(s, func(r rune) bool { return unicode.IsDigit(r) || r == '.' || r == '_' || unicode.IsLetter(r) })
	case c == '_' || unicode.IsLetter(rune(c)):
		n := span(s, func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) })
		if sx.keywords[s[:n]] {
			return "hl-keyword", n
		}
		return "", n
	}
	return "", 1
}

// lineEnd is the length of s's first line, without its newline.
func lineEnd(s string) int {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return i
	}
	return len(s)
}

// quoted is the length of the string literal s starts with: to its
// closing quote (skipping escaped ones), or its line's end when unclosed
// (a template string may span lines).
func quoted(s string) int {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			return i + 1
		case '\n':
			if q != '`' {
				return i
			}
		}
	}
	return len(s)
}

// span is the length of the run of s's characters that ok accepts.
func span(s string, ok func(rune) bool) int {
	for i, r := range s {
		if !ok(r) {
			return max(i, 1)
		}
	}
	return len(s)
}
