package s3store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/minio/minio-go/v7"

	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/files/storetest"
	"github.com/codexec/codexec/internal/s3store/s3test"
)

// serverOptions are Options for srv's bucket "codexec" below prefix.
func serverOptions(srv *s3test.Server, prefix string) Options {
	return Options{Endpoint: srv.Endpoint, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey,
		Bucket: "codexec", Prefix: prefix, Create: true}
}

func open(t *testing.T, o Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// keys lists every object key below the store's prefix, sorted.
func keys(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	for obj := range s.c.ListObjects(context.Background(), s.opts.Bucket, minio.ListObjectsOptions{Prefix: s.opts.Prefix, Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		out = append(out, strings.TrimPrefix(obj.Key, s.opts.Prefix))
	}
	sort.Strings(out)
	return out
}

// TestS3StoreContract runs the shared store suite on the S3 store over a
// real S3 server, each case below its own prefix of one bucket.
func TestS3StoreContract(t *testing.T) {
	srv := s3test.Start(t)
	var n atomic.Int32
	storetest.Run(t, func(t *testing.T, so storetest.Options) storetest.Instance {
		o := serverOptions(srv, fmt.Sprintf("case-%d", n.Add(1)))
		o.TTL, o.MaxBytes, o.Now = so.TTL, so.MaxBytes, so.Now
		s := open(t, o)
		holds := func(id string) bool {
			for _, k := range keys(t, s) {
				if k == "items/"+id+".json" || strings.HasPrefix(k, "data/"+id+"/") {
					return true
				}
			}
			return false
		}
		return storetest.Instance{Store: s, Sweep: s.Sweep, Holds: holds, Shared: true,
			Reopen: func() files.Store { return open(t, o) }}
	})
}

// TestKeysAreMadeFromIDs: whatever file names an item holds, its objects
// are named by its id and a counter only.
func TestKeysAreMadeFromIDs(t *testing.T) {
	srv := s3test.Start(t)
	s := open(t, serverOptions(srv, "keys/"))
	ctx := context.Background()
	for i, p := range []string{"in/data.bin", "a b/ü?.txt", "deep/./x//y.txt"} {
		if _, _, err := s.Put(ctx, fmt.Sprintf("upl_%d", i), p, strings.NewReader("x"), files.WriteOptions{}); err != nil {
			t.Fatalf("put %s: %v", p, err)
		}
	}
	want := []string{"data/upl_0/0", "data/upl_1/0", "data/upl_2/0", "items/upl_0.json", "items/upl_1.json", "items/upl_2.json"}
	if diff := cmp.Diff(want, keys(t, s)); diff != "" {
		t.Fatalf("keys (-want +got):\n%s", diff)
	}
	for _, id := range []string{"upl x", "upl?x", "upl%2Fx", "ü", "a\x00b"} {
		if _, _, err := s.Put(ctx, id, "f", strings.NewReader("x"), files.WriteOptions{}); err == nil {
			t.Errorf("id %q accepted", id)
		}
		if _, err := s.Get(ctx, id); err == nil || !strings.Contains(err.Error(), "not yours") {
			t.Errorf("get %q: %v, want not found", id, err)
		}
	}
}

// TestSweepRemovesOrphans: data no manifest names (a crashed upload) is
// removed once old enough; a live item's data is not.
func TestSweepRemovesOrphans(t *testing.T) {
	srv := s3test.Start(t)
	s := open(t, serverOptions(srv, "orphans"))
	ctx := context.Background()
	if _, _, err := s.Put(ctx, "upl_live", "f", strings.NewReader("live"), files.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.PutObject(ctx, "codexec", s.dataKey("upl_crashed", 0), strings.NewReader("lost"), 4, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Sweep() // the first sweep looks for orphans, but this one is too young
	if diff := cmp.Diff([]string{"data/upl_crashed/0", "data/upl_live/0", "items/upl_live.json"}, keys(t, s)); diff != "" {
		t.Fatalf("after a sweep (-want +got):\n%s", diff)
	}
	s.mu.Lock()
	s.orphanAge, s.lastOrphans = 0, time.Time{}
	s.mu.Unlock()
	s.Sweep()
	if diff := cmp.Diff([]string{"data/upl_live/0", "items/upl_live.json"}, keys(t, s)); diff != "" {
		t.Fatalf("after an orphan sweep (-want +got):\n%s", diff)
	}
}

// TestOpenRefuses: a bucket that cannot be used fails at start with an
// error naming what is wrong and where.
func TestOpenRefuses(t *testing.T) {
	srv := s3test.Start(t)
	good := serverOptions(srv, "")
	for _, tc := range []struct {
		name string
		edit func(o *Options)
		want string
	}{
		{"a missing bucket without create", func(o *Options) { o.Bucket, o.Create = "absent", false }, `bucket "absent" does not exist (create it, or add create=true`},
		{"wrong credentials", func(o *Options) { o.SecretKey = "wrong" }, "is not usable"},
		{"nothing listening", func(o *Options) { o.Endpoint = "127.0.0.1:1" }, "http://127.0.0.1:1/codexec/ is not usable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.edit(&o)
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			s, err := Open(ctx, o)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to say %q", err, tc.want)
			}
		})
	}
}
