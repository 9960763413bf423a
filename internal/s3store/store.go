// Package s3store keeps staged uploads and kept artifacts (a files.Store) in
// an S3-compatible bucket, so that several codexec replicas share them: an
// item one replica kept is listed, read and copied by every other.
//
// # Layout
//
// Below the configured prefix, item ID has a manifest object
// items/ID.json (the files.Item: owner, expiry, size, file names, modes and
// media types; owner, expiry and size also in its user metadata for
// operators) and one object per file, data/ID/N, N its index. Keys are made
// by the server from the item id (checked by files.CheckID and limited to
// letters, digits, '_', '-' and '.') and a counter, never from the file
// names a caller gives: names live only in the manifest, and come back out
// only through a files.Root, which confines them to the workspace. The
// manifest is written last, so an item exists exactly when its manifest
// does; removing an item removes the manifest first.
//
// # Expiry and budget
//
// Expiry is checked on every access against the manifest; a sweeper lists
// the manifests periodically and removes expired items, and data objects
// that no manifest names (an upload that crashed) once they are an hour
// old. The byte budget is the sum of the live items' sizes as listed in the
// bucket: before a file is kept, the oldest items are evicted until it fits.
// Replicas each check it against the listing, so concurrent writers on
// several replicas may overshoot it by what they have in flight, never for
// longer than their next write.
//
// # Memory
//
// Content is streamed: a kept file goes from its workspace fd to the
// bucket in parts read at offsets, a download is a ranged GET of at most
// the caller's maximum, and a copy into a workspace streams the object
// into the file. Uploads of unknown length hold one part (PartSize) at a
// time.
package s3store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/codexec/codexec/internal/files"
)

// PartSize is the size of the parts of multipart uploads, and the most
// memory one upload of unknown length holds.
const PartSize = 16 << 20

// Options say where the bucket is and how items are kept. TTL 0 means one
// hour; MaxBytes 0 means 512 MiB.
type Options struct {
	// Endpoint is host[:port] of the S3 API; Secure selects https.
	Endpoint string
	Secure   bool
	// Region is the bucket's region ("" lets the client ask the server).
	Region string
	// Bucket and Prefix name where objects go; Prefix ("" or ending in
	// "/") keeps codexec's objects apart from others in the bucket.
	Bucket, Prefix string
	// AccessKey and SecretKey are static credentials.
	AccessKey, SecretKey string
	// Create makes the bucket when it does not exist.
	Create bool

	TTL      time.Duration
	MaxBytes int64
	// Now is the clock (nil = time.Now); tests move it.
	Now func() time.Time
}

// Store is the S3-compatible files.Store. It is safe for concurrent use.
type Store struct {
	c    *minio.Client
	opts Options
	mu   sync.Mutex
	// known caches manifests by id (they never change once written);
	// refresh drops what the bucket no longer holds.
	known map[string]*manifest
	// pending is the bytes of files this store is writing and has not
	// committed yet, counted against the budget.
	pending int64
	// lastOrphans is when data without a manifest was last looked for;
	// orphanAge is how old such data must be to be removed.
	lastOrphans time.Time
	orphanAge   time.Duration
	stop        chan struct{}
	once        sync.Once
}

// Open connects to the bucket, checks that it is reachable (creating it
// with o.Create) and starts the sweeper; Close stops it. It fails with an
// error naming the endpoint and bucket when they cannot be used.
func Open(ctx context.Context, o Options) (*Store, error) {
	o = withDefaults(o)
	base, err := minio.DefaultTransport(o.Secure)
	if err != nil {
		return nil, fmt.Errorf("blob store %s: %w", o.where(), err)
	}
	c, err := minio.New(o.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(o.AccessKey, o.SecretKey, ""),
		Secure: o.Secure, Region: o.Region, MaxRetries: 3,
		Transport: tracedTransport{next: base},
	})
	if err != nil {
		return nil, fmt.Errorf("blob store %s: %w", o.where(), err)
	}
	s := &Store{c: c, opts: o, known: map[string]*manifest{}, orphanAge: orphanAge, stop: make(chan struct{})}
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	go files.SweepEvery(s.stop, s.opts.TTL, s.Sweep)
	return s, nil
}

func withDefaults(o Options) Options {
	if o.TTL <= 0 {
		o.TTL = time.Hour
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 512 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Prefix != "" && !strings.HasSuffix(o.Prefix, "/") {
		o.Prefix += "/"
	}
	return o
}

// where names the bucket for messages: scheme://endpoint/bucket/prefix.
func (o Options) where() string {
	scheme := "http"
	if o.Secure {
		scheme = "https"
	}
	return scheme + "://" + o.Endpoint + "/" + o.Bucket + "/" + o.Prefix
}

// check makes sure the bucket exists (or creates it) and can be listed.
func (s *Store) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ok, err := s.c.BucketExists(ctx, s.opts.Bucket)
	if err != nil {
		return fmt.Errorf("blob store %s is not usable: %w", s.opts.where(), err)
	}
	if !ok && !s.opts.Create {
		return fmt.Errorf("blob store %s: bucket %q does not exist (create it, or add create=true to CODEXEC_BLOB_STORE)", s.opts.where(), s.opts.Bucket)
	}
	if !ok {
		err := s.c.MakeBucket(ctx, s.opts.Bucket, minio.MakeBucketOptions{Region: s.opts.Region})
		if err != nil && !isCode(err, "BucketAlreadyOwnedByYou") {
			return fmt.Errorf("blob store %s: creating bucket %q: %w", s.opts.where(), s.opts.Bucket, err)
		}
		slog.Info("blob store: bucket created", "bucket", s.opts.Bucket)
	}
	for obj := range s.c.ListObjects(ctx, s.opts.Bucket, minio.ListObjectsOptions{Prefix: s.opts.Prefix, MaxKeys: 1}) {
		if obj.Err != nil {
			return fmt.Errorf("blob store %s cannot be listed: %w", s.opts.where(), obj.Err)
		}
		break
	}
	return nil
}

// Close stops the sweeper. Kept items stay in the bucket.
func (s *Store) Close() { s.once.Do(func() { close(s.stop) }) }

// Object keys. Ids are checked by checkID before any key is made.
func (s *Store) manifestKey(id string) string { return s.opts.Prefix + "items/" + id + ".json" }
func (s *Store) dataPrefix(id string) string  { return s.opts.Prefix + "data/" + id + "/" }
func (s *Store) dataKey(id string, n int) string {
	return fmt.Sprintf("%s%d", s.dataPrefix(id), n)
}

// checkID is files.CheckID narrowed to characters that mean the same in
// every S3 server's keys and in the file names of gateways that map keys to
// files.
func checkID(id string) error {
	if err := files.CheckID(id); err != nil {
		return err
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("invalid item id %q", id)
		}
	}
	return nil
}

// isCode reports whether err is an S3 error response with code.
func isCode(err error, code string) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && er.Code == code
}

// isMissing reports whether err says an object or key does not exist.
func isMissing(err error) bool {
	return isCode(err, "NoSuchKey") || isCode(err, "NotFound") || minio.ToErrorResponse(err).StatusCode == 404
}
