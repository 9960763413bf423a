package s3store

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/tenant"
)

// manifest is what items/ID.json holds: the item and, for each of its
// files in the same order, where its bytes are.
type manifest struct {
	files.Item
	Objects []object `json:"objects"`
	// next is the number of the next data object (not stored).
	next int
}

// object is one file's data object: data/ID/N. Only the number is stored,
// so a manifest cannot name an object outside its own item.
type object struct {
	N         int         `json:"n"`
	Mode      fs.FileMode `json:"mode"`
	MediaType string      `json:"media_type"`
}

// maxManifest bounds what is read of a manifest object.
const maxManifest = 16 << 20

// newManifest starts item id of ctx's principal, created now.
func (s *Store) newManifest(ctx context.Context, id string) *manifest {
	now := s.opts.Now()
	return &manifest{Item: files.Item{ID: id, Owner: tenant.From(ctx), Created: now.UTC(),
		Expires: now.Add(s.opts.TTL).UTC(), Files: []files.Entry{}}}
}

// add records a stored file.
func (m *manifest) add(e files.Entry, o object) {
	m.Files = append(m.Files, e)
	m.Objects = append(m.Objects, o)
	m.Bytes += e.Size
}

// index is the position of file rel, or -1.
func (m *manifest) index(rel string) int {
	return slices.IndexFunc(m.Files, func(e files.Entry) bool { return e.Path == rel })
}

// sortFiles orders the files by path, as DirStore does.
func (m *manifest) sortFiles() {
	idx := make([]int, len(m.Files))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return m.Files[idx[a]].Path < m.Files[idx[b]].Path })
	fs, os := make([]files.Entry, len(idx)), make([]object, len(idx))
	for i, j := range idx {
		fs[i], os[i] = m.Files[j], m.Objects[j]
	}
	m.Files, m.Objects = fs, os
}

// item is a copy of the item for a caller, with each file's mode.
func (m *manifest) item() files.Item {
	it := m.Item
	it.Files = slices.Clone(m.Files)
	for i := range it.Files {
		it.Files[i].Mode = m.Objects[i].Mode
	}
	it.Skipped = slices.Clone(m.Skipped)
	return it
}

// live reports whether the item has not expired at now.
func (m *manifest) live(now time.Time) bool { return now.Before(m.Expires) }

// put writes the manifest object: the item exists from now on.
func (s *Store) putManifest(ctx context.Context, m *manifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	meta := map[string]string{"owner": url.QueryEscape(m.Owner), "expires-at": m.Expires.Format(time.RFC3339),
		"bytes": strconv.FormatInt(m.Bytes, 10)}
	_, err = s.c.PutObject(ctx, s.opts.Bucket, s.manifestKey(m.ID), bytesReader(b), int64(len(b)),
		minio.PutObjectOptions{ContentType: "application/json", UserMetadata: meta})
	if err != nil {
		return fmt.Errorf("blob store: writing the manifest of %s: %w", m.ID, err)
	}
	return nil
}

// fetch reads item id's manifest from the bucket (files.NotFound when
// there is none) and caches it.
func (s *Store) fetch(ctx context.Context, id string) (*manifest, error) {
	obj, err := s.c.GetObject(ctx, s.opts.Bucket, s.manifestKey(id), minio.GetObjectOptions{})
	if err != nil {
		return nil, s.readErr(id, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(io.LimitReader(obj, maxManifest))
	if err != nil {
		return nil, s.readErr(id, err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil || m.ID != id || len(m.Objects) != len(m.Files) {
		return nil, fmt.Errorf("blob store: the manifest of %s is damaged (%v)", id, err)
	}
	s.mu.Lock()
	s.known[id] = &m
	s.mu.Unlock()
	return &m, nil
}

// readErr is files.NotFound for an object that is gone (the item was
// evicted or swept meanwhile), else the S3 error.
func (s *Store) readErr(id string, err error) error {
	if isMissing(err) {
		s.mu.Lock()
		delete(s.known, id)
		s.mu.Unlock()
		return files.NotFound(id)
	}
	return fmt.Errorf("blob store %s: %w", s.opts.where(), err)
}

// load returns the manifest of a live item of the caller, read from the
// bucket, or files.NotFound in the same words for a missing, expired or
// foreign one.
func (s *Store) load(ctx context.Context, id string) (*manifest, error) {
	return s.loadFrom(ctx, id, false)
}

// loadCached is load that takes a manifest from the cache when it has one
// (manifests never change): for Read and CopyTo, whose GET of the data
// itself finds out when the item was removed meanwhile. It saves a round
// trip per file when a listing sniffs every file's media type.
func (s *Store) loadCached(ctx context.Context, id string) (*manifest, error) {
	return s.loadFrom(ctx, id, true)
}

func (s *Store) loadFrom(ctx context.Context, id string, cached bool) (*manifest, error) {
	if checkID(id) != nil {
		return nil, files.NotFound(id)
	}
	s.mu.Lock()
	m := s.known[id]
	s.mu.Unlock()
	if m == nil || !cached {
		var err error
		if m, err = s.fetch(ctx, id); err != nil {
			return nil, err
		}
	}
	if !tenant.Owns(ctx, m.Owner) || !m.live(s.opts.Now()) {
		return nil, files.NotFound(id)
	}
	return m, nil
}
