package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/s3store"
	"github.com/codexec/codexec/internal/sessionckpt"
)

// checkpointStore is the blob store a checkpoint lives in (see
// checkpoint.Blobs) with its Close.
type checkpointStore interface {
	checkpoint.Blobs
	Close()
}

// buildCheckpoints opens where session checkpoints live — the blob store
// of CODEXEC_BLOB_STORE, on a directory (DATA_DIR/checkpoints) or key
// prefix (PREFIX/checkpoints/) of their own, so their expiry and budget
// are theirs — and returns them with the Manager's options. Records of
// paused sessions stay under the data dir (DATA_DIR/checkpoint-records),
// unless replicas share both the blob store (S3) and the PostgreSQL store:
// then the records are in the database and any replica resumes a session
// another one paused.
func (a *App) buildCheckpoints(ctx context.Context, cfg config.Config) (checkpoint.Blobs, sessionckpt.Options, error) {
	c := cfg.Checkpoint
	o := sessionckpt.Options{Dir: filepath.Join(cfg.DataDir, "checkpoint-records"), MaxBytes: c.MaxBytes, MaxTotal: c.MaxTotal,
		Auto: c.Auto, IdleClose: c.IdleAction == config.IdleClose, Spares: c.Spares, MaxFork: c.MaxFork,
		MemoryLimit: cfg.MemoryLimitBytes}
	key, err := cfg.CheckpointKey()
	if err != nil {
		return nil, o, err
	}
	if key != nil {
		if o.Sealer, err = checkpoint.NewSealer(key); err != nil {
			return nil, o, err
		}
	}
	store, err := openCheckpointStore(ctx, cfg)
	if err != nil {
		return nil, o, err
	}
	a.closers = append(a.closers, store.Close)
	if a.sharesPaused(cfg) {
		o.Records, o.Shared = a.store.Records(), true
	}
	slog.Info("session checkpoints", "shared", o.Shared, "encrypted", key != nil, "idle_action", c.IdleAction, "auto", c.Auto, "spares", c.Spares)
	return store, o, nil
}

// openCheckpointStore opens the checkpoints' own part of the blob store.
// Its byte budget leaves room for one more checkpoint than the total
// bound, which the session Manager enforces, so the store never evicts a
// paused session's checkpoint to make room.
func openCheckpointStore(ctx context.Context, cfg config.Config) (checkpointStore, error) {
	c := cfg.Checkpoint
	budget := c.MaxTotal + c.MaxBytes
	if loc := cfg.Blob.S3; loc != nil {
		s, err := s3store.Open(ctx, s3store.Options{Endpoint: loc.Endpoint, Secure: loc.Secure, Region: loc.Region,
			Bucket: loc.Bucket, Prefix: loc.Prefix + "checkpoints/", Create: loc.Create, AccessKey: cfg.Blob.AccessKey,
			SecretKey: cfg.Blob.SecretKey, TTL: c.TTL, MaxBytes: budget})
		if err != nil {
			return nil, fmt.Errorf("CODEXEC_BLOB_STORE (checkpoints): %w", err)
		}
		return s, nil
	}
	return files.NewDirStore(filepath.Join(cfg.DataDir, "checkpoints"), files.DirOptions{TTL: c.TTL, MaxBytes: budget})
}

// sharesPaused reports whether paused sessions are shared by replicas:
// this server is one of them, and checkpoints are in the S3 bucket they
// all read.
func (a *App) sharesPaused(cfg config.Config) bool {
	return a.replicas != nil && a.store != nil && cfg.Blob.S3 != nil
}
