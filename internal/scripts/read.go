package scripts

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// readScriptVersion reads the current version (version 0 or the current
// number) or versions/<version>/ of the script in dir.
func readScriptVersion(dir, name string, version int) (Script, error) {
	cur, err := readScript(dir, name)
	if err != nil {
		return Script{}, err
	}
	versions := listVersions(dir)
	cur.Versions = append(versions, cur.Version)
	if version == 0 || version == cur.Version {
		return cur, nil
	}
	if !slices.Contains(versions, version) {
		return Script{}, fmt.Errorf("%w: %s has no version %d (versions: %v)", ErrNotFound, name, version, cur.Versions)
	}
	old, err := readScript(filepath.Join(dir, versionsDir, strconv.Itoa(version)), name)
	if err != nil {
		return Script{}, err
	}
	old.Version, old.Versions = version, cur.Versions
	return old, nil
}

// listVersions returns the archived version numbers in dir, ascending.
func listVersions(dir string) []int {
	ents, _ := os.ReadDir(filepath.Join(dir, versionsDir))
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() && n > 0 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// readScript reads one script directory. The code file decides the language
// (a human may have renamed it); metadata.json, when missing or unreadable,
// is replaced by defaults so a hand-made directory still works.
func readScript(dir, name string) (Script, error) {
	m, metaErr := readMeta(dir)
	path, lang := findCode(dir, m.Language)
	if path == "" {
		return Script{}, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	code, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("%w: %s: %v", ErrNotFound, name, err)
	}
	if metaErr != nil && !os.IsNotExist(metaErr) {
		slog.Warn("script metadata unreadable; using defaults", "script", name, "err", metaErr)
	}
	m.Name, m.Language = name, lang
	if m.Version < 1 {
		m.Version = 1
	}
	if m.CreatedAt.IsZero() {
		if fi, err := os.Stat(path); err == nil {
			m.CreatedAt = fi.ModTime().UTC()
		}
	}
	if m.UpdatedAt.IsZero() {
		m.UpdatedAt = m.CreatedAt
	}
	m.Tags, m.Packages = nonNil(m.Tags), nonNil(m.Packages)
	return Script{Meta: m, Code: string(code), Path: path}, nil
}

func readMeta(dir string) (Meta, error) {
	var m Meta
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, err
	}
	return m, nil
}

// findCode returns the code file of dir, preferring the extension of the
// language the metadata names.
func findCode(dir, prefer string) (string, string) {
	if e := Ext(prefer); e != "" {
		if p := filepath.Join(dir, scriptPrefix+e); isFile(p) {
			return p, prefer
		}
	}
	for _, e := range []string{"py", "js", "ts", "sh"} {
		if p := filepath.Join(dir, scriptPrefix+e); isFile(p) {
			return p, langOfExt(e)
		}
	}
	return "", ""
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// tokens splits a query into lower-case words.
func tokens(q string) []string {
	return strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
	})
}
