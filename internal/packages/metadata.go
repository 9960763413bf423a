package packages

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// InstalledVersion reads the version of s installed in dir from the
// package's own metadata: <dir>/*.dist-info/METADATA (python --target) or
// <dir>/node_modules/<name>/package.json (npm --prefix).
func InstalledVersion(s Spec, dir string) (string, error) {
	if s.Language == Node {
		return npmVersionIn(s.Name, dir)
	}
	return pipVersionIn(s.Normalized, dir)
}

func npmVersionIn(name, dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"))
	if err != nil {
		return "", fmt.Errorf("installed package %s not found: %w", name, err)
	}
	var pj struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &pj); err != nil || pj.Version == "" {
		return "", fmt.Errorf("installed package %s has no readable version in package.json", name)
	}
	return pj.Version, nil
}

func pipVersionIn(normalized, dir string) (string, error) {
	infos := distInfos(dir)[normalized]
	if len(infos) == 0 {
		return "", fmt.Errorf("installed distribution %s not found in %s", normalized, dir)
	}
	return infos[0].version, nil
}

type distInfo struct {
	path, version string
	mtime         time.Time
}

// distInfos maps normalized project names to their *.dist-info directories
// in dir, newest first.
func distInfos(dir string) map[string][]distInfo {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.dist-info"))
	out := map[string][]distInfo{}
	for _, p := range paths {
		name, version := readMetadata(filepath.Join(p, "METADATA"))
		st, err := os.Stat(p)
		if name == "" || version == "" || err != nil {
			continue
		}
		n := NormalizePython(name)
		out[n] = append(out[n], distInfo{path: p, version: version, mtime: st.ModTime()})
	}
	for _, l := range out {
		sort.Slice(l, func(i, j int) bool { return l[i].mtime.After(l[j].mtime) })
	}
	return out
}

// pruneStaleDistInfo removes older *.dist-info directories of projects that
// pip --target --upgrade replaced: pip replaces the package's top-level
// directories but leaves the previous version's dist-info (its name carries
// the version), which would otherwise make the old version look installed.
func pruneStaleDistInfo(dir string) {
	for _, l := range distInfos(dir) {
		for _, d := range l[1:] {
			_ = os.RemoveAll(d.path)
		}
	}
}

// readMetadata returns the Name and Version headers of a core metadata file.
func readMetadata(path string) (name, version string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break // end of headers
		}
		k, v, ok := strings.Cut(line, ":")
		switch {
		case !ok:
		case strings.EqualFold(k, "Name"):
			name = strings.TrimSpace(v)
		case strings.EqualFold(k, "Version"):
			version = strings.TrimSpace(v)
		}
	}
	return name, version
}
