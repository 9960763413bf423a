package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/s3store"
	"github.com/codexec/codexec/internal/sandbox"
)

// buildFiles opens the store of kept artifacts and staged uploads, makes the
// engine keep every one-shot run's artifacts in it, and installs the python
// support module (matplotlib backend) on every python run's path.
func (a *App) buildFiles(ctx context.Context, cfg config.Config, opts *engine.Options) (files.Store, error) {
	store, closeStore, err := openBlobStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	store = files.Traced(store) // spans only while traces are exported
	a.closers = append(a.closers, closeStore)
	opts.AfterRun = keepArtifacts(store)
	support := filepath.Join(cfg.DataDir, "support", "python")
	if err := files.InstallPython(support); err != nil {
		return nil, err
	}
	addPythonSupport(opts, support)
	return store, nil
}

// openBlobStore opens the store CODEXEC_BLOB_STORE names: the embedded
// directory store, or an S3-compatible bucket, checked (and with create=true
// created) before the server starts so that a wrong endpoint, bucket or key
// fails the start with an error saying which.
func openBlobStore(ctx context.Context, cfg config.Config) (files.Store, func(), error) {
	if loc := cfg.Blob.S3; loc != nil {
		s, err := s3store.Open(ctx, s3store.Options{Endpoint: loc.Endpoint, Secure: loc.Secure, Region: loc.Region,
			Bucket: loc.Bucket, Prefix: loc.Prefix, Create: loc.Create, AccessKey: cfg.Blob.AccessKey, SecretKey: cfg.Blob.SecretKey,
			TTL: cfg.ArtifactTTL, MaxBytes: cfg.ArtifactMaxBytes})
		if err != nil {
			return nil, nil, fmt.Errorf("CODEXEC_BLOB_STORE: %w", err)
		}
		slog.Info("blob store: S3-compatible bucket", "endpoint", loc.Endpoint, "bucket", loc.Bucket, "prefix", loc.Prefix)
		return s, s.Close, nil
	}
	s, err := files.NewDirStore(filepath.Join(cfg.DataDir, "artifacts"), files.DirOptions{TTL: cfg.ArtifactTTL, MaxBytes: cfg.ArtifactMaxBytes})
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
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
