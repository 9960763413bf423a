package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/proc"
)

// Overrides are operator-chosen interpreter paths; empty means discover.
type Overrides struct {
	Python, Node, Bash string
}

// candidates are preferred system locations, tried before PATH: they are
// real binaries (a PATH entry may be a version-manager shim that costs 100+ ms
// per start) and live under /usr, which isolated sandboxes mount.
var candidates = map[string][]string{
	Python: {"/usr/bin/python3", "/usr/local/bin/python3"},
	Node:   {"/usr/bin/node", "/usr/local/bin/node"},
	Bash:   {"/usr/bin/bash", "/bin/bash"},
}

var pathNames = map[string]string{Python: "python3", Node: "node", Bash: "bash"}

// Discover resolves every interpreter to an absolute, symlink-free path.
// pathEnv is the server's PATH, searched after the preferred locations.
// A language that cannot be found gets an Interpreter with Err set; the others
// still work.
func Discover(ctx context.Context, o Overrides, pathEnv string) *Set {
	set := &Set{byLang: map[string]Interpreter{}}
	for lang, override := range map[string]string{Python: o.Python, Node: o.Node, Bash: o.Bash} {
		p, err := resolve(ctx, lang, override, pathEnv)
		set.byLang[lang] = Interpreter{Path: p, Err: err}
	}
	return set
}

func resolve(ctx context.Context, lang, override, pathEnv string) (string, error) {
	if override != "" {
		return realExecutable(override)
	}
	for _, c := range candidates[lang] {
		if p, err := realExecutable(c); err == nil {
			return p, nil
		}
	}
	p, err := lookPath(pathNames[lang], pathEnv)
	if err != nil {
		return "", fmt.Errorf("%s not found in %v or on PATH", pathNames[lang], candidates[lang])
	}
	if isScript(p) {
		return unshim(ctx, lang, p)
	}
	return realExecutable(p)
}

func realExecutable(p string) (string, error) {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	st, err := os.Stat(r)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", p)
	}
	return r, nil
}

func lookPath(name, pathEnv string) (string, error) {
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			continue
		}
		if p, err := realExecutable(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", errors.New("not found")
}

// isScript reports whether p starts with "#!" (a shim rather than a binary).
func isScript(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 2)
	n, _ := f.Read(b)
	return n == 2 && string(b) == "#!"
}

// unshim asks the interpreter behind a shim for its real executable, once.
func unshim(ctx context.Context, lang, shim string) (string, error) {
	probe := map[string][]string{
		Python: {"-c", "import sys; print(sys.executable)"},
		Node:   {"-p", "process.execPath"},
	}[lang]
	if probe == nil {
		return realExecutable(shim)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, shim, probe...)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := proc.RunTracked(cmd); err != nil {
		return "", fmt.Errorf("%s (a shim) failed to report its interpreter: %w", shim, err)
	}
	return realExecutable(strings.TrimSpace(out.String()))
}
