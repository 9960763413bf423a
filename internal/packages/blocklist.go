package packages

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Blocklist is a set of package names the operator forbids. An entry may be
// qualified with its ecosystem ("python:name", "pip:name", "node:name",
// "npm:name"); a bare entry blocks the name in both. Names compare
// normalized (PEP 503 for python, case-insensitively for npm). The zero value
// and nil block nothing. A Blocklist is immutable and safe for concurrent use.
type Blocklist struct {
	python, node map[string]string // normalized → entry as written
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
// and an entry that is not a valid package name is an error.
func ParseBlocklist(entries []string) (*Blocklist, error) {
	bl := &Blocklist{python: map[string]string{}, node: map[string]string{}}
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

func (bl *Blocklist) add(eco, name, entry string) error {
	pyOK, nodeOK := checkPyName(name, name) == nil, checkNPMName(name, name) == nil
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
		bl.python[NormalizePython(name)] = entry
	}
	if nodeOK {
		bl.node[strings.ToLower(name)] = entry
	}
	return nil
}

// Len is the number of blocked names over both ecosystems.
func (bl *Blocklist) Len() int {
	if bl == nil {
		return 0
	}
	return len(bl.python) + len(bl.node)
}

// Check returns an error naming the blocklist entry if s is blocked.
func (bl *Blocklist) Check(s Spec) error {
	if bl == nil {
		return nil
	}
	m := bl.python
	if s.Language == Node {
		m = bl.node
	}
	if entry, ok := m[s.Normalized]; ok {
		return &BlockedError{Package: s.Name, Entry: entry}
	}
	return nil
}

// BlockedError reports a package refused by the operator's blocklist.
type BlockedError struct {
	Package string // as requested
	Entry   string // the blocklist entry that matched
}

func (e *BlockedError) Error() string {
	if strings.EqualFold(e.Package, e.Entry) {
		return fmt.Sprintf("package %q is blocked by the server's package blocklist (CODEXEC_PACKAGE_BLOCKLIST)", e.Package)
	}
	return fmt.Sprintf("package %q is blocked by the server's package blocklist (CODEXEC_PACKAGE_BLOCKLIST entry %q)", e.Package, e.Entry)
}
