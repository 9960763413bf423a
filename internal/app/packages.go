package app

import (
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/packages"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
)

// addGlobalPackages makes globally installed packages visible to every run:
// PYTHONPATH / NODE_PATH per language, and the directories mounted read-only
// at the same path so isolated backends see them too.
func addGlobalPackages(opts *engine.Options, root string) error {
	dirs, err := packages.Prepare(root)
	if err != nil {
		return fmt.Errorf("CODEXEC_PACKAGES_DIR: %w", err)
	}
	for _, d := range dirs {
		opts.Mounts = append(opts.Mounts, sandbox.Mount{Host: d, Target: d, ReadOnly: true})
	}
	prev := opts.ExtraEnv
	opts.ExtraEnv = func(lang string) []string {
		var env []string
		if prev != nil {
			env = prev(lang)
		}
		switch lang {
		case runtime.Python:
			env = append(env, packages.SearchEnv(packages.Python, packages.Dir(root, packages.Python)))
		case runtime.Node, runtime.TypeScript:
			env = append(env, packages.SearchEnv(packages.Node, packages.Dir(root, packages.Node)))
		}
		return env
	}
	return nil
}

// newInstaller builds install_package's installer: the discovered host
// python's pip, npm from the server's PATH, the operator's installer
// environment and registry settings, and the blocklist.
func newInstaller(cfg config.Config, env HostEnv, langs *runtime.Set) (*packages.Installer, error) {
	bl, err := packages.ResolveBlocklist(cfg.PackageBlocklist, cfg.PackageBlocklistExtra, env.Home)
	if err != nil {
		return nil, err
	}
	npm := lookNPM(env.Path)
	if npm == "" {
		slog.Warn("npm not found on PATH: install_package cannot install node packages")
	}
	return packages.New(packages.Options{
		Python: langs.Get(runtime.Python).Path, NPM: npm, Env: installerEnv(env),
		PipIndexURL: cfg.PipIndexURL, NPMRegistry: cfg.NPMRegistry, Timeout: cfg.MaxTimeout,
		Output:     output.Limits{Max: cfg.MaxOutputChars, Head: cfg.TruncationHead, Tail: cfg.TruncationTail},
		GlobalRoot: cfg.PackagesDir, Blocklist: bl,
	}), nil
}

// installerEnv is the installers' environment: the operator's installer
// settings, with PATH, LANG and HOME filled in from the host facts when
// missing.
func installerEnv(env HostEnv) []string {
	out := append([]string(nil), env.Installer...)
	have := map[string]bool{}
	for _, kv := range out {
		k, _, _ := strings.Cut(kv, "=")
		have[k] = true
	}
	for _, kv := range append(BaseEnv(env), "HOME="+env.Home) {
		if k, _, _ := strings.Cut(kv, "="); !have[k] && k != "TERM" {
			out = append(out, kv)
		}
	}
	return out
}

// lookNPM finds npm on the server's PATH (it is a script run by node; its
// shebang resolves node through the same PATH).
func lookNPM(path string) string {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, "npm")
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	return ""
}
