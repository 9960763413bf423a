package s3store

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/codexec/codexec/internal/files"
)

// orphanAge is how old data without a manifest must be before a sweep
// removes it: older than any upload still in flight on some replica.
const orphanAge = time.Hour

// orphanEvery is how often a sweep also looks for such data (it lists every
// data object, which costs more than listing manifests).
const orphanEvery = 15 * time.Minute

// Sweep removes every expired item now (any replica may; removing twice is
// harmless), and now and then data objects no manifest names.
func (s *Store) Sweep() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s.refresh(ctx)
	now := s.opts.Now()
	var gone []*manifest
	s.mu.Lock()
	for id, m := range s.known {
		if !m.live(now) {
			gone = append(gone, m)
			delete(s.known, id)
		}
	}
	orphans := time.Since(s.lastOrphans) >= orphanEvery
	if orphans {
		s.lastOrphans = time.Now()
	}
	s.mu.Unlock()
	for _, m := range gone {
		s.remove(ctx, m)
	}
	if orphans {
		s.removeOrphans(ctx)
	}
}

// remove deletes an item: its manifest first (the item is gone from then
// on), then its data.
func (s *Store) remove(ctx context.Context, m *manifest) {
	s.removeObject(m.ID, s.manifestKey(m.ID))
	for _, o := range m.Objects {
		s.removeObject(m.ID, s.dataKey(m.ID, o.N))
	}
}

// removeObject deletes one object, logging a failure (a sweep retries what
// remains).
func (s *Store) removeObject(id, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.c.RemoveObject(ctx, s.opts.Bucket, key, minio.RemoveObjectOptions{}); err != nil && !isMissing(err) {
		slog.Warn("blob store: removing an object failed", "id", id, "key", key, "err", err)
	}
}

// removeOrphans deletes data objects older than orphanAge whose item has no
// manifest (an upload or keep that crashed before its commit).
func (s *Store) removeOrphans(ctx context.Context) {
	prefix := s.opts.Prefix + "data/"
	for obj := range s.c.ListObjects(ctx, s.opts.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			slog.Warn("blob store: listing data failed", "bucket", s.opts.Bucket, "err", obj.Err)
			return
		}
		id, _, ok := strings.Cut(strings.TrimPrefix(obj.Key, prefix), "/")
		if !ok || time.Since(obj.LastModified) < s.orphanAge {
			continue
		}
		s.mu.Lock()
		known := s.known[id] != nil
		s.mu.Unlock()
		if !known && checkID(id) == nil {
			if _, err := s.c.StatObject(ctx, s.opts.Bucket, s.manifestKey(id), minio.StatObjectOptions{}); isMissing(err) {
				slog.Info("blob store: removing data without an item", "key", obj.Key)
				s.removeObject(id, obj.Key)
			}
		}
	}
}

func isNotFound(err error) bool { return errors.Is(err, files.ErrNotFound) }
