package packages

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Layout of an install root (the global CODEXEC_PACKAGES_DIR, or a session's
// package directory): <root>/python is a pip --target directory, itself the
// search path entry; <root>/node is an npm --prefix directory whose modules
// live in <root>/node/node_modules.

// Dir is the install directory for language under root.
func Dir(root, language string) string { return filepath.Join(root, language) }

// SearchPath returns the variable and directory that make packages installed
// into dir (an install directory for language) visible to the interpreter:
// PYTHONPATH=dir or NODE_PATH=dir/node_modules. typescript counts as node.
func SearchPath(language, dir string) (key, value string) {
	if language == Python {
		return "PYTHONPATH", dir
	}
	return "NODE_PATH", filepath.Join(dir, "node_modules")
}

// Prepare creates the install directories under root (including the
// node_modules directory, so read-only mounts of it never fail) and returns
// the directories to mount into sandboxes.
func Prepare(root string) ([]string, error) {
	if root == "" {
		return nil, errors.New("package root directory is empty")
	}
	py := Dir(root, Python)
	nm := filepath.Join(Dir(root, Node), "node_modules")
	for _, d := range []string{py, nm} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	return []string{py, Dir(root, Node)}, nil
}

// GlobalDir is the global install directory for language, or "" when
// Options.GlobalRoot is empty (global installs disabled).
func (in *Installer) GlobalDir(language string) string {
	if in.opts.GlobalRoot == "" {
		return ""
	}
	return Dir(in.opts.GlobalRoot, language)
}

// SearchEnv is the "K=V" entry that puts the install directories dirs (for
// language, most specific first, e.g. a session's then the global one) on
// the interpreter's search path.
func SearchEnv(language string, dirs ...string) string {
	var key string
	vals := make([]string, 0, len(dirs))
	for _, d := range dirs {
		k, v := SearchPath(language, d)
		key, vals = k, append(vals, v)
	}
	return key + "=" + strings.Join(vals, string(os.PathListSeparator))
}
