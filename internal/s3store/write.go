package s3store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/mimetype"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// begin checks that id can name a new item.
func (s *Store) begin(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	_, err := s.c.StatObject(ctx, s.opts.Bucket, s.manifestKey(id), minio.StatObjectOptions{})
	switch {
	case err == nil:
		return fmt.Errorf("item %s already exists", id)
	case !isMissing(err):
		return fmt.Errorf("blob store %s: %w", s.opts.where(), err)
	}
	return nil
}

// Keep implements files.Store: each file is opened through src (confined
// to the workspace, with the sandbox user's rights) and streamed from that
// fd into its own object.
func (s *Store) Keep(ctx context.Context, id string, src *files.Root, paths []string) (files.Item, error) {
	// A run's artifacts are kept even when its caller went away meanwhile
	// (as the embedded store keeps them), within a bound of their own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keepTimeout)
	defer cancel()
	if err := s.begin(ctx, id); err != nil {
		return files.Item{}, err
	}
	s.refresh(ctx) // the budget is the bucket's, not this replica's
	m := s.newManifest(ctx, id)
	for _, p := range paths {
		if err := s.keepOne(ctx, m, src, p); err != nil {
			m.Skipped = append(m.Skipped, p+": "+err.Error())
		}
	}
	if err := s.commit(ctx, m); err != nil {
		return files.Item{}, err
	}
	return m.item(), nil
}

func (s *Store) keepOne(ctx context.Context, m *manifest, src *files.Root, p string) error {
	f, err := src.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if m.index(f.Path) >= 0 {
		return fmt.Errorf("%s: %w", f.Path, files.ErrExists)
	}
	if !s.reserve(ctx, m.ID, f.Size) {
		return fmt.Errorf("%d bytes do not fit the artifact store (CODEXEC_ARTIFACT_MAX_BYTES=%d): %w", f.Size, s.opts.MaxBytes, files.ErrTooLarge)
	}
	head := make([]byte, min(f.Size, mimetype.SniffLen))
	n, _ := f.ReadAt(head, 0)
	o := object{N: m.next, Mode: f.Mode, MediaType: mimetype.Detect(f.Path, head[:n])}
	m.next++
	// A section of exactly the size reserved: a file that grows meanwhile
	// cannot exceed it, and the client reads the parts at their offsets.
	body := io.NewSectionReader(f, 0, f.Size)
	if _, err := s.c.PutObject(ctx, s.opts.Bucket, s.dataKey(m.ID, o.N), body, f.Size, s.putOptions(m.ID, o)); err != nil {
		s.release(f.Size)
		s.removeObject(m.ID, s.dataKey(m.ID, o.N))
		return fmt.Errorf("blob store: %w", err)
	}
	m.add(files.Entry{Path: f.Path, Size: f.Size, MTime: f.MTime, Type: "file", Mode: f.Mode}, o)
	return nil
}

// putOptions are a data object's: its media type, and the item it belongs
// to for operators (file names stay in the manifest: user metadata is
// small, and names may be long).
func (s *Store) putOptions(id string, o object) minio.PutObjectOptions {
	return minio.PutObjectOptions{ContentType: o.MediaType, PartSize: PartSize, UserMetadata: map[string]string{"item": id}}
}

// keepTimeout bounds keeping one run's artifacts.
const keepTimeout = 10 * time.Minute

// Put implements files.Store. The size is known only after the upload (at
// most o.Max bytes are accepted): the data goes up first, then room is made
// for it, so a small upload never evicts for a worst case.
func (s *Store) Put(ctx context.Context, id, p string, r io.Reader, o files.WriteOptions) (files.Item, files.Written, error) {
	rel, err := files.Clean(p)
	if err != nil {
		return files.Item{}, files.Written{}, err
	}
	if rel == "" {
		return files.Item{}, files.Written{}, errors.New("path names the workspace itself; give a file name")
	}
	if err := s.begin(ctx, id); err != nil {
		return files.Item{}, files.Written{}, err
	}
	m := s.newManifest(ctx, id)
	w, obj, err := s.upload(ctx, id, rel, r, o)
	if err != nil {
		s.removeObject(id, s.dataKey(id, 0))
		return files.Item{}, files.Written{}, err
	}
	s.refresh(ctx)
	if !s.reserve(ctx, id, w.Size) {
		s.removeObject(id, s.dataKey(id, 0))
		return files.Item{}, files.Written{}, fmt.Errorf("%d bytes do not fit the staging area (CODEXEC_ARTIFACT_MAX_BYTES=%d): %w", w.Size, s.opts.MaxBytes, files.ErrTooLarge)
	}
	m.add(files.Entry{Path: rel, Size: w.Size, MTime: s.opts.Now().UTC(), Type: "file", Mode: o.Mode}, obj)
	if err := s.commit(ctx, m); err != nil {
		return files.Item{}, files.Written{}, err
	}
	return m.item(), w, nil
}

// upload streams r into item id's first data object, hashing it and
// refusing more than o.Max bytes.
func (s *Store) upload(ctx context.Context, id, rel string, r io.Reader, o files.WriteOptions) (files.Written, object, error) {
	size := int64(-1)
	if l, ok := r.(interface{ Len() int }); ok {
		size = int64(l.Len())
	}
	if o.Max > 0 && size > o.Max {
		return files.Written{}, object{}, fmt.Errorf("more than %d bytes: %w", o.Max, files.ErrTooLarge)
	}
	br := bufio.NewReaderSize(r, mimetype.SniffLen)
	head, _ := br.Peek(mimetype.SniffLen)
	obj := object{N: 0, Mode: o.Mode, MediaType: mimetype.Detect(rel, head)}
	cr := &counter{r: br, max: o.Max, h: sha256.New()}
	if _, err := s.c.PutObject(ctx, s.opts.Bucket, s.dataKey(id, 0), cr, size, s.putOptions(id, obj)); err != nil {
		if cr.over {
			return files.Written{}, object{}, fmt.Errorf("more than %d bytes: %w", o.Max, files.ErrTooLarge)
		}
		return files.Written{}, object{}, fmt.Errorf("blob store: %w", err)
	}
	return files.Written{Path: rel, Size: cr.n, SHA256: hex.EncodeToString(cr.h.Sum(nil))}, obj, nil
}

// counter counts and hashes what is read through it and fails the read
// that goes past max (0 = no limit), which aborts the upload.
type counter struct {
	r    io.Reader
	h    hash.Hash
	n    int64
	max  int64
	over bool
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.h.Write(p[:n])
	if c.max > 0 && c.n > c.max {
		c.over = true
		return n, files.ErrTooLarge
	}
	return n, err
}

// reserve makes room for n more bytes by evicting the oldest other items
// known from the bucket's listing; false when n cannot fit at all.
func (s *Store) reserve(ctx context.Context, self string, n int64) bool {
	if n > s.opts.MaxBytes {
		return false
	}
	s.mu.Lock()
	used := s.pending
	for _, m := range s.known {
		used += m.Bytes
	}
	var victims []*manifest
	for used+n > s.opts.MaxBytes {
		oldest := s.oldest(self)
		if oldest == nil {
			s.mu.Unlock()
			return false
		}
		delete(s.known, oldest.ID)
		used -= oldest.Bytes
		victims = append(victims, oldest)
	}
	s.pending += n
	s.mu.Unlock()
	for _, v := range victims {
		slog.Info("artifact store full: evicting oldest item", "id", v.ID)
		s.remove(ctx, v)
	}
	return true
}

// oldest is the known item created first other than self; mu is held.
func (s *Store) oldest(self string) *manifest {
	var out *manifest
	for id, m := range s.known {
		if id != self && (out == nil || m.Created.Before(out.Created)) {
			out = m
		}
	}
	return out
}

func (s *Store) release(n int64) {
	s.mu.Lock()
	s.pending -= n
	s.mu.Unlock()
}

// commit writes the manifest of the finished item (its bytes are already
// reserved); on failure it removes what was uploaded.
func (s *Store) commit(ctx context.Context, m *manifest) error {
	m.sortFiles()
	err := s.putManifest(ctx, m)
	s.mu.Lock()
	s.pending -= m.Bytes
	if err == nil {
		s.known[m.ID] = m
	}
	s.mu.Unlock()
	if err != nil {
		s.remove(ctx, m)
	}
	return err
}
