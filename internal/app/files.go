package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
)

// buildFiles opens the store of kept artifacts and staged uploads, makes the
// engine keep every one-shot run's artifacts in it, and installs the python
// support module (matplotlib backend) on every python run's path.
func (a *App) buildFiles(cfg config.Config, opts *engine.Options) (files.Store, error) {
	store, err := files.NewDirStore(filepath.Join(cfg.DataDir, "artifacts"), files.DirOptions{TTL: cfg.ArtifactTTL, MaxBytes: cfg.ArtifactMaxBytes})
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, store.Close)
	opts.AfterRun = keepArtifacts(store)
	support := filepath.Join(cfg.DataDir, "support", "python")
	if err := files.InstallPython(support); err != nil {
		return nil, err
	}
	addPythonSupport(opts, support)
	return store, nil
}

// keepArtifacts copies a run's created and modified files into the store
// under its execution id, read from the workspace without following
// symlinks and with the sandbox user's rights (a file it could not read is
// skipped), whichever backend or runner ran the code.
func keepArtifacts(store files.Store) func(context.Context, *files.Root, *engine.Result) {
	return func(ctx context.Context, root *files.Root, res *engine.Result) {
		if len(res.Artifacts) == 0 {
			return
		}
		it, err := store.Keep(ctx, res.ExecutionID, root, res.Artifacts)
		if err != nil {
			slog.Warn("artifacts not kept", "execution_id", res.ExecutionID, "err", err)
			return
		}
		if len(it.Skipped) > 0 {
			slog.Info("some artifacts not kept", "execution_id", res.ExecutionID, "skipped", it.Skipped)
		}
	}
}

// addPythonSupport puts dir on PYTHONPATH (after installed packages),
// selects codexec's matplotlib backend and rc file, keeps matplotlib's cache out of the
// workspace (it would show up as artifacts), and mounts dir read-only.
func addPythonSupport(opts *engine.Options, dir string) {
	opts.Mounts = append(opts.Mounts, sandbox.Mount{Host: dir, Target: dir, ReadOnly: true})
	prev := opts.ExtraEnv
	opts.ExtraEnv = func(lang string) []string {
		var env []string
		if prev != nil {
			env = prev(lang)
		}
		if lang != runtime.Python {
			return env
		}
		env = appendPath(env, "PYTHONPATH", dir)
		return append(env, "MPLBACKEND="+files.MPLBackend, "MATPLOTLIBRC="+dir, "MPLCONFIGDIR=/tmp/matplotlib")
	}
}

// appendPath appends dir to the list variable key in env, adding it if absent.
func appendPath(env []string, key, dir string) []string {
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			if v != "" {
				v += ":"
			}
			env[i] = key + "=" + v + dir
			return env
		}
	}
	return append(env, key+"="+dir)
}
