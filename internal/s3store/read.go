package s3store

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/tenant"
)

// Get implements files.Store; it reads the manifest from the bucket, so an
// item another replica kept, evicted or swept is seen at once.
func (s *Store) Get(ctx context.Context, id string) (files.Item, error) {
	m, err := s.load(ctx, id)
	if err != nil {
		return files.Item{}, err
	}
	return m.item(), nil
}

// Read implements files.Store with one ranged GET of at most max bytes.
func (s *Store) Read(ctx context.Context, id, p string, offset, length, max int64) ([]byte, files.Entry, error) {
	m, err := s.loadCached(ctx, id)
	if err != nil {
		return nil, files.Entry{}, err
	}
	rel, err := files.Clean(p)
	if err != nil {
		return nil, files.Entry{}, err
	}
	i := m.index(rel)
	if i < 0 {
		return nil, files.Entry{}, fmt.Errorf("%s: %w in %s (list_files shows its files)", rel, files.ErrNotFound, id)
	}
	e := m.item().Files[i]
	if offset < 0 || offset > e.Size {
		return nil, e, fmt.Errorf("offset %d is outside the file (size %d)", offset, e.Size)
	}
	if length > max {
		return nil, e, fmt.Errorf("%s: length %d exceeds the limit of %d bytes per read: %w", e.Path, length, max, files.ErrTooLarge)
	}
	n := min(e.Size-offset, max)
	if length > 0 {
		n = min(n, length)
	}
	if n <= 0 {
		return []byte{}, e, nil
	}
	buf, err := s.readRange(ctx, s.dataKey(id, m.Objects[i].N), offset, n)
	if err != nil {
		return nil, e, s.readErr(id, err)
	}
	return buf, e, nil
}

// readRange reads n bytes of key from offset.
func (s *Store) readRange(ctx context.Context, key string, offset, n int64) ([]byte, error) {
	var o minio.GetObjectOptions
	if err := o.SetRange(offset, offset+n-1); err != nil {
		return nil, err
	}
	obj, err := s.c.GetObject(ctx, s.opts.Bucket, key, o)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(obj, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// CopyTo implements files.Store: each object is streamed into dst (which
// confines the names and refuses to overwrite), at most its recorded size.
func (s *Store) CopyTo(ctx context.Context, id string, dst *files.Root) ([]files.Written, error) {
	m, err := s.loadCached(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []files.Written
	for i, e := range m.item().Files {
		w, err := s.copyOne(ctx, id, m.Objects[i].N, e, dst)
		if err != nil {
			return out, err
		}
		out = append(out, w)
	}
	return out, nil
}

func (s *Store) copyOne(ctx context.Context, id string, n int, e files.Entry, dst *files.Root) (files.Written, error) {
	obj, err := s.c.GetObject(ctx, s.opts.Bucket, s.dataKey(id, n), minio.GetObjectOptions{})
	if err != nil {
		return files.Written{}, s.readErr(id, err)
	}
	defer obj.Close()
	// At most one byte more than the manifest says is read: enough to tell
	// that the object does not match it.
	w, err := dst.Write(e.Path, io.LimitReader(obj, e.Size+1), files.WriteOptions{Mode: e.Mode, Max: e.Size})
	switch {
	case isMissing(err):
		return files.Written{}, s.readErr(id, err)
	case err != nil:
		return files.Written{}, fmt.Errorf("upload %s: %w", id, err)
	case w.Size != e.Size:
		return w, fmt.Errorf("upload %s: %s holds %d bytes, its manifest says %d", id, e.Path, w.Size, e.Size)
	}
	return w, nil
}

// List implements files.Store: the bucket's manifests are listed (new ones
// fetched once), so items kept by other replicas are included.
func (s *Store) List(ctx context.Context) []files.Item {
	s.refresh(ctx)
	now := s.opts.Now()
	var out []files.Item
	s.mu.Lock()
	for _, m := range s.known {
		if tenant.Owns(ctx, m.Owner) && m.live(now) {
			out = append(out, m.item())
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out
}

// refresh makes the cache of manifests the bucket's: manifests no longer
// listed are dropped, new ones fetched. A listing that fails leaves the
// cache as it was (and is logged).
func (s *Store) refresh(ctx context.Context) {
	listed := map[string]bool{}
	prefix := s.opts.Prefix + "items/"
	for obj := range s.c.ListObjects(ctx, s.opts.Bucket, minio.ListObjectsOptions{Prefix: prefix}) {
		if obj.Err != nil {
			slog.Warn("blob store: listing items failed", "bucket", s.opts.Bucket, "err", obj.Err)
			return
		}
		id, ok := strings.CutSuffix(strings.TrimPrefix(obj.Key, prefix), ".json")
		if ok && checkID(id) == nil {
			listed[id] = true
		}
	}
	s.mu.Lock()
	var missing []string
	for id := range s.known {
		if !listed[id] {
			delete(s.known, id)
		}
	}
	for id := range listed {
		if s.known[id] == nil {
			missing = append(missing, id)
		}
	}
	s.mu.Unlock()
	for _, id := range missing {
		if _, err := s.fetch(ctx, id); err != nil && !isNotFound(err) {
			slog.Warn("blob store: reading a manifest failed", "id", id, "err", err)
		}
	}
}
