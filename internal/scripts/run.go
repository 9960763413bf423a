package scripts

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/errcode"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runtime"
)

// Runner runs saved scripts through the engine. Safe for concurrent use.
type Runner struct {
	// Libraries holds the scripts (Files(store) for the embedded library).
	Libraries Libraries
	Engine    *engine.Engine
}

// ErrPreflight marks a package pre-flight check that could not run.
var ErrPreflight = errcode.New(errcode.PreflightFailed, "package pre-flight check failed")

// MissingPackagesError is run_script's pre-flight failure: the script's
// required packages that its language environment cannot find.
type MissingPackagesError struct {
	Script, Language string
	Missing          []string
}

func (e *MissingPackagesError) Error() string {
	var calls []string
	for _, p := range e.Missing {
		b, _ := json.Marshal(map[string]string{"package": p, "language": installLanguage(e.Language)})
		calls = append(calls, "install_package "+string(b))
	}
	return fmt.Sprintf("script %q needs packages that are not installed: %s. Install them first with: %s",
		e.Script, strings.Join(e.Missing, ", "), strings.Join(calls, "; "))
}

func installLanguage(lang string) string {
	if lang == runtime.TypeScript {
		return runtime.Node
	}
	return lang
}

// RunRequest is one run of a saved script.
type RunRequest struct {
	Name    string
	Args    []string // the program's argv after its name
	Timeout time.Duration
	Context execlog.CallContext
	// Observe, if set, sees the output as it runs.
	Observe output.Observer
	// Prepare, if set, places files in the run's workspace before it starts
	// (engine.Request.Prepare).
	Prepare func(ws *files.Root) error
	// Network is the run's resolved network policy (engine.Request.Network).
	Network egress.Policy
}

// Run executes the current version of req.Name from ctx's principal's
// library with req.Args as its argv after the package pre-flight, records
// the run in the script's metadata, and returns the engine's result.
// Unknown scripts and missing packages are errors (nothing ran); a failing
// program is a Result with its status.
func (r *Runner) Run(ctx context.Context, req RunRequest) (engine.Result, error) {
	name := req.Name
	lib, err := r.Libraries.For(ctx)
	if err != nil {
		return engine.Result{}, err
	}
	sc, err := lib.Get(ctx, name, 0)
	if err != nil {
		return engine.Result{}, err
	}
	missing, err := r.MissingPackages(ctx, sc.Language, sc.Packages)
	if err != nil {
		return engine.Result{}, fmt.Errorf("%w: %v", ErrPreflight, err)
	}
	if len(missing) > 0 {
		return engine.Result{}, &MissingPackagesError{Script: name, Language: sc.Language, Missing: missing}
	}
	res, err := r.Engine.Execute(ctx, engine.Request{Language: sc.Language, Code: sc.Code, Args: nonNil(req.Args),
		Timeout: req.Timeout, Tool: "run_script", ScriptName: name, Context: req.Context, Observe: req.Observe,
		Prepare: req.Prepare, Network: req.Network})
	if err != nil {
		return res, err
	}
	if err := lib.RecordRun(ctx, name, time.Now(), res.Success); err != nil {
		slog.Warn("could not record script run", "script", name, "err", err)
	}
	return res, nil
}

// probes check, in the script's own language environment, which of the
// package names given as argv cannot be found; they print the missing ones
// as a JSON array (bash: one per line).
var probes = map[string]string{
	runtime.Python: `import sys, re, json, importlib.util, importlib.metadata
missing = []
for spec in sys.argv[1:]:
    name = re.split(r"[<>=!~\[;@ ]", spec, maxsplit=1)[0].strip()
    try:
        importlib.metadata.distribution(name)
        continue
    except Exception:
        pass
    try:
        if importlib.util.find_spec(name.replace("-", "_")) is not None:
            continue
    except Exception:
        pass
    missing.append(spec)
print(json.dumps(missing))`,
	runtime.Node: `const missing = [];
for (const spec of process.argv.slice(2)) {
  const name = spec.replace(/^(@?[^@]+).*$/, "$1");
  try { require.resolve(name, { paths: [process.cwd(), ...module.paths] }); } catch (e) { missing.push(spec); }
}
console.log(JSON.stringify(missing));`,
	runtime.Bash: `m=(); for c in "$@"; do command -v -- "$c" >/dev/null 2>&1 || m+=("\"$c\""); done; (IFS=,; echo "[${m[*]}]")`,
}

// MissingPackages returns the packages of lang that its environment lacks,
// by running one small probe through the engine (unlogged). No packages
// means no probe.
func (r *Runner) MissingPackages(ctx context.Context, lang string, pkgs []string) ([]string, error) {
	if len(pkgs) == 0 {
		return nil, nil
	}
	probeLang := lang
	if lang == runtime.TypeScript {
		probeLang = runtime.Node
	}
	code, ok := probes[probeLang]
	if !ok {
		return nil, fmt.Errorf("no package check for %s", lang)
	}
	res, err := r.Engine.Execute(ctx, engine.Request{Language: probeLang, Code: code, Args: pkgs,
		Timeout: 30 * time.Second, NoLog: true})
	if err != nil {
		return nil, err
	}
	var missing []string
	if res.Status != engine.StatusSuccess || json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &missing) != nil {
		return nil, fmt.Errorf("probe status %s: %s %s", res.Status, strings.TrimSpace(res.Stderr), strings.TrimSpace(res.Stdout))
	}
	return missing, nil
}
