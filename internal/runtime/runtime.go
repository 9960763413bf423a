// Package runtime knows how to run each supported language: which
// interpreter (resolved to an absolute path once, at start-up, so a
// version-manager shim on PATH costs nothing per call), how the code reaches
// it, and how TypeScript is compiled (in-process, with esbuild).
//
// A Set is immutable after Discover and safe for concurrent use.
package runtime

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/codexec/codexec/internal/errcode"
)

// Canonical language names.
const (
	Python     = "python"
	Node       = "node"
	TypeScript = "typescript"
	Bash       = "bash"
)

var aliases = map[string]string{
	"python": Python, "python3": Python, "py": Python,
	"node": Node, "javascript": Node, "js": Node, "nodejs": Node,
	"typescript": TypeScript, "ts": TypeScript,
	"bash": Bash, "sh": Bash, "shell": Bash,
}

// Normalize maps a language name or alias (case-insensitive) to its canonical
// name, or returns an error listing what is accepted.
func Normalize(lang string) (string, error) {
	if c, ok := aliases[strings.ToLower(strings.TrimSpace(lang))]; ok {
		return c, nil
	}
	return "", errcode.New(errcode.InvalidLanguage, "unsupported language %q: use one of %s", lang, strings.Join(AcceptedNames(), ", "))
}

// AcceptedNames lists every accepted language name and alias, sorted.
func AcceptedNames() []string {
	names := make([]string, 0, len(aliases))
	for k := range aliases {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Languages lists the canonical languages in a stable order.
func Languages() []string { return []string{Python, Node, TypeScript, Bash} }

// Interpreter is one resolved interpreter. Err is set when the language is
// unavailable on this host; Path is then empty.
type Interpreter struct {
	Path    string
	Version string
	Err     error
}

// Set maps canonical languages to interpreters. TypeScript uses Node's.
type Set struct {
	byLang map[string]Interpreter
}

// Get returns the interpreter for a canonical language name.
func (s *Set) Get(lang string) Interpreter {
	if lang == TypeScript {
		lang = Node
	}
	in, ok := s.byLang[lang]
	if !ok {
		return Interpreter{Err: fmt.Errorf("language %s is not configured", lang)}
	}
	return in
}

// Paths returns the distinct interpreter paths (for mounting into sandboxes).
func (s *Set) Paths() []string {
	var out []string
	for _, in := range s.byLang {
		if in.Path != "" && !slices.Contains(out, in.Path) {
			out = append(out, in.Path)
		}
	}
	sort.Strings(out)
	return out
}

// Fixed is a Set of the given interpreter paths by canonical language,
// taken as they are (no lookup, no check): for tests over a fake sandbox
// backend, where nothing is executed.
func Fixed(paths map[string]string) *Set {
	set := &Set{byLang: map[string]Interpreter{}}
	for lang, p := range paths {
		set.byLang[lang] = Interpreter{Path: p}
	}
	return set
}
