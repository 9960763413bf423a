package checkpoint

import (
	"fmt"
	"regexp"
	"sort"
)

// Report says, by name, what a checkpoint carries and what it could not.
// The driver fills Values, Defs, Modules and Lost when it takes the
// checkpoint, and again when it restores one (a module may fail to import
// in the new process); the server adds the workspace's Files and
// FilesLost. Kept compact: every byte reaches the agent.
type Report struct {
	// Values were serialised (pickle, v8.serialize) and restored as they were.
	Values []string `json:"values,omitempty"`
	// Defs are functions and classes re-created from their source in the
	// session's history.
	Defs []string `json:"defs,omitempty"`
	// Modules are modules and module attributes re-imported by name
	// (import x as y, from m import f).
	Modules []string `json:"modules,omitempty"`
	// Lost maps each name that could not be carried to why.
	Lost map[string]string `json:"lost,omitempty"`
	// Files is how many workspace files were carried.
	Files int `json:"files,omitempty"`
	// FilesLost maps each workspace path not carried to why.
	FilesLost map[string]string `json:"files_lost,omitempty"`
	// Notes say what else differs after a restore (generators reseeded, a
	// fresh process).
	Notes []string `json:"notes,omitempty"`
}

// Names returns every name the report mentions as carried (values, defs
// and modules), sorted.
func (r Report) Names() []string {
	out := append(append(append([]string{}, r.Values...), r.Defs...), r.Modules...)
	sort.Strings(out)
	return out
}

// secretName is what a name holding a credential tends to look like.
var secretName = regexp.MustCompile(`(?i)token|key|secret|password`)

// SecretValues returns the carried values whose names look like secrets
// (*token*, *key*, *secret*, *password*, any case), sorted.
func (r Report) SecretValues() []string {
	var out []string
	for _, n := range r.Values {
		if secretName.MatchString(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Merge returns r with what restoring it found: the restore's own lists
// replace the checkpoint's (they say what really came back), and its lost
// names join those the checkpoint already could not carry.
func (r Report) Merge(restored Report) Report {
	out := restored
	out.Lost = map[string]string{}
	for k, v := range r.Lost {
		out.Lost[k] = v
	}
	for k, v := range restored.Lost {
		out.Lost[k] = v
	}
	if len(out.Lost) == 0 {
		out.Lost = nil
	}
	out.Files, out.FilesLost = r.Files, r.FilesLost
	out.Notes = append(append([]string(nil), r.Notes...), restored.Notes...)
	return out
}

// MaxNames bounds each list and map of a report a client sees: a session
// may hold thousands of names, and every byte of a result costs the agent.
const MaxNames = 200

// Bounded returns r with each list and map cut to MaxNames entries (the
// first ones in sorted order) and a note per cut saying how many more
// there were.
func (r Report) Bounded() Report {
	cut := func(what string, l []string) []string {
		if len(l) <= MaxNames {
			return l
		}
		sort.Strings(l)
		r.Notes = append(r.Notes, fmt.Sprintf("%d more %s not listed", len(l)-MaxNames, what))
		return l[:MaxNames:MaxNames]
	}
	r.Values, r.Defs, r.Modules = cut("values", r.Values), cut("defs", r.Defs), cut("modules", r.Modules)
	r.Lost = cutMap(r.Lost, "lost names", &r.Notes)
	r.FilesLost = cutMap(r.FilesLost, "files not carried", &r.Notes)
	return r
}

func cutMap(m map[string]string, what string, notes *[]string) map[string]string {
	if len(m) <= MaxNames {
		return m
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, MaxNames)
	for _, k := range keys[:MaxNames] {
		out[k] = m[k]
	}
	*notes = append(*notes, fmt.Sprintf("%d more %s not listed", len(m)-MaxNames, what))
	return out
}
