package packages

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Blocklist is a set of package names the operator forbids. An entry may be
// qualified with its ecosystem ("python:name", "pip:name", "node:name",
// "npm:name"); a bare entry blocks the name in both. Names compare
// normalized (PEP 503 for python, case-insensitively for npm). The zero value
// and nil block nothing. A Blocklist is immutable and safe for concurrent use.
type Blocklist struct {
	python, node map[string]*blocked // normalized name → what is blocked
}

// LoadBlocklist reads CODEXEC_PACKAGE_BLOCKLIST: empty means no blocklist; a
// value naming an existing file, or starting with "/", "./", "../" or "~/",
// is a file with one entry per line ("#" starts a comment); anything else is
// a comma-separated list. home expands a leading "~/".
func LoadBlocklist(setting, home string) (*Blocklist, error) {
	setting = strings.TrimSpace(setting)
	if setting == "" {
		return &Blocklist{}, nil
	}
	path := setting
	if strings.HasPrefix(path, "~/") {
		path = home + path[1:]
	}
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		return loadFile(path)
	}
	for _, p := range []string{"/", "./", "../", "~/"} {
		if strings.HasPrefix(setting, p) {
			return nil, fmt.Errorf("CODEXEC_PACKAGE_BLOCKLIST: file %s cannot be read", path)
		}
	}
	return ParseBlocklist(strings.Split(setting, ","))
}

func loadFile(path string) (*Blocklist, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("CODEXEC_PACKAGE_BLOCKLIST: %w", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("CODEXEC_PACKAGE_BLOCKLIST %s: %w", path, err)
	}
	bl, err := ParseBlocklist(lines)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return bl, nil
}

// ParseBlocklist builds a Blocklist from entries; blank entries are skipped
// and an entry that is not a valid package name is an error. An entry may pin
// versions: "name@1.2.3" (npm) or "name==1.2.3" (python) blocks only that
// version (see Check).
func ParseBlocklist(entries []string) (*Blocklist, error) {
	bl := &Blocklist{python: map[string]*blocked{}, node: map[string]*blocked{}}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		eco, name := "", e
		if q, rest, ok := strings.Cut(e, ":"); ok {
			eco, name = strings.ToLower(q), rest
		}
		if err := bl.add(eco, name, e); err != nil {
			return nil, err
		}
	}
	return bl, nil
}

// blocked is one blocked name: every version, or only those in versions.
type blocked struct {
	entry    string          // as written (the first entry for this name)
	versions map[string]bool // nil: every version
}

func (bl *Blocklist) add(eco, name, entry string) error {
	pyName, pyVer, _ := strings.Cut(name, "==")
	nodeName, nodeVer := splitNPMVersion(name)
	pyOK := checkPyName(pyName, name) == nil && !strings.Contains(name, "@")
	nodeOK := checkNPMName(nodeName, name) == nil && !strings.Contains(name, "==")
	switch eco {
	case "python", "pip", "pypi":
		nodeOK = false
	case "node", "npm":
		pyOK = false
	case "":
	default:
		return fmt.Errorf("CODEXEC_PACKAGE_BLOCKLIST: entry %q: unknown ecosystem %q (use python: or node:)", entry, eco)
	}
	if !pyOK && !nodeOK {
		return fmt.Errorf("CODEXEC_PACKAGE_BLOCKLIST: entry %q is not a package name", entry)
	}
	if pyOK {
		block(bl.python, NormalizePython(pyName), strings.TrimSpace(pyVer), entry)
	}
	if nodeOK {
		block(bl.node, strings.ToLower(nodeName), nodeVer, entry)
	}
	return nil
}

// splitNPMVersion splits "name@1.2.3" or "@scope/name@1.2.3"; the version is
// "" without one.
func splitNPMVersion(s string) (name, version string) {
	if i := strings.LastIndex(s, "@"); i > 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

func block(m map[string]*blocked, key, version, entry string) {
	b := m[key]
	if b == nil {
		b = &blocked{entry: entry, versions: map[string]bool{}}
		m[key] = b
	}
	if version == "" || b.versions == nil {
		b.versions = nil // a whole-name entry wins over version entries
		return
	}
	b.versions[version] = true
}

// merge adds other's entries to bl.
func (bl *Blocklist) merge(other *Blocklist) {
	for dst, src := range map[*map[string]*blocked]map[string]*blocked{&bl.python: other.python, &bl.node: other.node} {
		if *dst == nil {
			*dst = map[string]*blocked{}
		}
		for k, b := range src {
			if b.versions == nil {
				block(*dst, k, "", b.entry)
			}
			for v := range b.versions {
				block(*dst, k, v, b.entry)
			}
		}
	}
}

// Len is the number of blocked names over both ecosystems.
func (bl *Blocklist) Len() int {
	if bl == nil {
		return 0
	}
	return len(bl.python) + len(bl.node)
}

// Check returns a *BlockedError naming the entry if s is blocked. A name
// blocked only in some versions blocks a request pinned to one of them, and
// also a request that pins no exact version (a range or "latest" could
// resolve to the bad version; the error says to pin a good one). A request
// pinned to another version passes.
func (bl *Blocklist) Check(s Spec) error {
	if bl == nil {
		return nil
	}
	m := bl.python
	if s.Language == Node {
		m = bl.node
	}
	b, ok := m[s.Normalized]
	switch {
	case !ok:
		return nil
	case b.versions == nil:
		return &BlockedError{Package: s.Name, Entry: b.entry}
	}
	pinned := exactVersion(s)
	if pinned == "" {
		return &BlockedError{Package: s.Name, Entry: b.entry, Versions: sortedKeys(b.versions)}
	}
	if b.versions[pinned] {
		return &BlockedError{Package: s.Name + " " + pinned, Entry: b.entry}
	}
	return nil
}

var exactNPM = regexp.MustCompile(`^=?v?(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?)$`)

// exactVersion is the one version s pins, or "" for a range or none.
func exactVersion(s Spec) string {
	v := strings.TrimSpace(s.Version)
	if s.Language == Node {
		if m := exactNPM.FindStringSubmatch(v); m != nil {
			return m[1]
		}
		return ""
	}
	if rest, ok := strings.CutPrefix(v, "=="); ok && !strings.ContainsAny(rest, ",*") {
		return strings.TrimPrefix(strings.TrimSpace(rest), "=")
	}
	return ""
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// BlockedError reports a package refused by the server's blocklist.
type BlockedError struct {
	Package  string   // as requested
	Entry    string   // the blocklist entry that matched
	Versions []string // set when only these versions are blocked and the request pinned none
}

func (e *BlockedError) Error() string {
	if len(e.Versions) > 0 {
		return fmt.Sprintf("package %q is blocked in version %s by the server's package blocklist (known malicious); pin another exact version to install it",
			e.Package, strings.Join(e.Versions, ", "))
	}
	if strings.EqualFold(e.Package, e.Entry) {
		return fmt.Sprintf("package %q is blocked by the server's package blocklist (known malicious or operator-blocked)", e.Package)
	}
	return fmt.Sprintf("package %q is blocked by the server's package blocklist (entry %q: known malicious or operator-blocked)", e.Package, e.Entry)
}
