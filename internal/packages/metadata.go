package packages

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	infos, _ := filepath.Glob(filepath.Join(dir, "*.dist-info"))
	for _, info := range infos {
		name, version := readMetadata(filepath.Join(info, "METADATA"))
		if name != "" && NormalizePython(name) == normalized && version != "" {
			return version, nil
		}
	}
	return "", fmt.Errorf("installed distribution %s not found in %s", normalized, dir)
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
