package toolsearch

import (
	"encoding/json"
	"sort"
	"strings"
)

// ParamText returns the top-level parameter names of a tool's JSON input
// schema and their descriptions, each sorted and space-separated, for
// Doc.Params and Doc.ParamDocs. A schema that does not parse gives "".
func ParamText(schema json.RawMessage) (names, descs string) {
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
