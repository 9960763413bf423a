package codemode

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/codexec/codexec/internal/upstream"
)

// Tool is one upstream tool injected into a program: an entry of the
// upstream catalogue.
type Tool = upstream.Tool

// CamelName turns a name into a camelCase identifier: "list_commits",
// "list-commits" and "ListCommits" give "listCommits".
func CamelName(name string) string {
	parts := identParts(name)
	for i, p := range parts {
		if i == 0 {
			parts[i] = strings.ToLower(p[:1]) + p[1:]
		} else {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return safeIdent(strings.Join(parts, ""))
}

// SnakeName turns a name into a snake_case identifier: "listCommits" and
// "list-commits" give "list_commits".
func SnakeName(name string) string {
	parts := identParts(name)
	for i, p := range parts {
		parts[i] = strings.ToLower(p)
	}
	return safeIdent(strings.Join(parts, "_"))
}

// identParts splits at non-alphanumerics and lower→upper changes.
func identParts(name string) []string {
	var parts []string
	var cur []rune
	rs := []rune(name)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if len(cur) > 0 {
				parts, cur = append(parts, string(cur)), nil
			}
			continue
		}
		if len(cur) > 0 && unicode.IsUpper(r) && i > 0 && unicode.IsLower(rs[i-1]) {
			parts, cur = append(parts, string(cur)), nil
		}
		cur = append(cur, r)
	}
	if len(cur) > 0 {
		parts = append(parts, string(cur))
	}
	if len(parts) == 0 {
		return []string{"x"}
	}
	return parts
}

func safeIdent(s string) string {
	if s == "" || unicode.IsDigit(rune(s[0])) {
		s = "_" + s
	}
	if reserved[s] || pyReserved[s] {
		s += "_"
	}
	return s
}

// Server is the binding of one upstream server: the variable it is bound to
// and, per tool name, the aliases that also call it.
type Server struct {
	Name    string
	Ident   string
	Tools   []Tool
	Aliases map[string][]string
}

// Group binds tools by server (sorted by server, then tool). A tool is
// callable by its own name (server["get-sum"]) and by its camelCase and
// snake_case aliases (server.getSum, server.get_sum) unless another tool
// of the server already has that name.
func Group(tools []Tool) []Server {
	byServer := map[string]*Server{}
	var names []string
	for _, t := range tools {
		s := byServer[t.Server]
		if s == nil {
			s = &Server{Name: t.Server, Ident: CamelName(t.Server), Aliases: map[string][]string{}}
			byServer[t.Server] = s
			names = append(names, t.Server)
		}
		s.Tools = append(s.Tools, t)
	}
	sort.Strings(names)
	out := make([]Server, 0, len(names))
	for _, n := range names {
		s := byServer[n]
		sort.Slice(s.Tools, func(i, j int) bool { return s.Tools[i].Name < s.Tools[j].Name })
		taken := map[string]bool{}
		for _, t := range s.Tools {
			taken[t.Name] = true
		}
		for _, t := range s.Tools {
			for _, a := range []string{CamelName(t.Name), SnakeName(t.Name)} {
				if !taken[a] {
					taken[a] = true
					s.Aliases[t.Name] = append(s.Aliases[t.Name], a)
				}
			}
		}
		out = append(out, *s)
	}
	return out
}

// OneLineDoc is the first sentence of a description, at most 140 bytes.
func OneLineDoc(desc string) string {
	d := strings.Join(strings.Fields(desc), " ")
	if i := strings.Index(d, ". "); i >= 0 {
		d = d[:i+1]
	}
	if len(d) > 140 {
		cut := strings.LastIndex(d[:137], " ")
		if cut < 80 {
			cut = 137
		}
		d = d[:cut] + "…"
	}
	return d
}

// Signature is the compact TypeScript call signature of t as code calls it:
// server.camelName(args: {…}): Promise<any>.
func Signature(t Tool) string {
	return fmt.Sprintf("%s.%s(args: %s): Promise<any>", CamelName(t.Server), CamelName(t.Name), ArgsType(t.InputSchema))
}

// ArgsType renders a tool's input schema as a TypeScript type; "{}" when the
// tool takes no arguments.
func ArgsType(schema json.RawMessage) string {
	var s map[string]any
	if json.Unmarshal(schema, &s) != nil || s == nil {
		return "Record<string, any>"
	}
	if _, ok := s["properties"]; !ok && s["type"] == "object" {
		return "{}"
	}
	return tsType(s, 0)
}

// Declarations is the .d.ts text of the injected bindings.
func Declarations(tools []Tool) string {
	var b strings.Builder
	b.WriteString("/** Calls any injected tool by server and tool name. */\n")
	b.WriteString("declare function callTool(server: string, tool: string, args?: Record<string, any>): Promise<any>;\n")
	for _, s := range Group(tools) {
		fmt.Fprintf(&b, "declare const %s: {\n", s.Ident)
		for _, t := range s.Tools {
			args := ArgsType(t.InputSchema)
			opt := ""
			if !hasRequired(t.InputSchema) {
				opt = "?"
			}
			if doc := OneLineDoc(t.Description); doc != "" {
				fmt.Fprintf(&b, "  /** %s */\n", strings.ReplaceAll(doc, "*/", "*\\/"))
			}
			for _, name := range append([]string{tsKey(t.Name)}, s.Aliases[t.Name]...) {
				fmt.Fprintf(&b, "  %s(args%s: %s): Promise<any>;\n", name, opt, args)
			}
		}
		b.WriteString("};\n")
	}
	return b.String()
}

func hasRequired(schema json.RawMessage) bool {
	var s struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(schema, &s)
	return len(s.Required) > 0
}

func tsKey(k string) string {
	if identRe.MatchString(k) {
		return k
	}
	b, _ := json.Marshal(k)
	return string(b)
}

// tsType converts a JSON Schema (decoded) to a TypeScript type, depth-bounded.
func tsType(s map[string]any, depth int) string {
	if depth > 6 {
		return "any"
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		var lits []string
		for _, v := range e {
			b, _ := json.Marshal(v)
			lits = append(lits, string(b))
		}
		return strings.Join(lits, " | ")
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			var ts []string
			for _, a := range alts {
				if m, ok := a.(map[string]any); ok {
					ts = append(ts, tsType(m, depth+1))
				}
			}
			return strings.Join(ts, " | ")
		}
	}
	switch typ := s["type"].(type) {
	case string:
		return tsPrimitive(typ, s, depth)
	case []any:
		var ts []string
		for _, t := range typ {
			if str, ok := t.(string); ok {
				ts = append(ts, tsPrimitive(str, s, depth))
			}
		}
		return strings.Join(ts, " | ")
	}
	if _, ok := s["properties"]; ok {
		return tsObject(s, depth)
	}
	return "any"
}

func tsPrimitive(typ string, s map[string]any, depth int) string {
	switch typ {
	case "string":
		return "string"
	case "number", "integer":
		return "number"
	case "boolean":
		return "boolean"
	case "null":
		return "null"
	case "array":
		if it, ok := s["items"].(map[string]any); ok {
			t := tsType(it, depth+1)
			if strings.ContainsAny(t, "|&") {
				t = "(" + t + ")"
			}
			return t + "[]"
		}
		return "any[]"
	case "object":
		return tsObject(s, depth)
	}
	return "any"
}

func tsObject(s map[string]any, depth int) string {
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 {
		if ap, ok := s["additionalProperties"].(map[string]any); ok {
			return "Record<string, " + tsType(ap, depth+1) + ">"
		}
		return "Record<string, any>"
	}
	req := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, v := range r {
			if str, ok := v.(string); ok {
				req[str] = true
			}
		}
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		m, _ := props[k].(map[string]any)
		opt := "?"
		if req[k] {
			opt = ""
		}
		parts = append(parts, tsKey(k)+opt+": "+tsType(m, depth+1))
	}
	return "{ " + strings.Join(parts, "; ") + " }"
}
