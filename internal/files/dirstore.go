package files

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/atomicfile"
	"github.com/codexec/codexec/internal/tenant"
)

// DirOptions configure a DirStore. TTL 0 means one hour; MaxBytes 0 means
// 512 MiB.
type DirOptions struct {
	TTL      time.Duration
	MaxBytes int64
	// Now is the clock (nil = time.Now); tests move it.
	Now func() time.Time
}

// DirStore is the local Store: one directory per item below its root
// (<id>/files/… plus <id>/item.json), an in-memory index rebuilt from the
// item.json files at start-up, expiry checked on every access and swept
// periodically, and the oldest items evicted when a new file would exceed
// MaxBytes.
type DirStore struct {
	root string
	opts DirOptions
	mu   sync.Mutex
	// items is the index; used is the sum of their Bytes.
	items map[string]*Item
	used  int64
	stop  chan struct{}
	once  sync.Once
}

// NewDirStore opens (creating) a store in dir and starts its sweeper; Close
// stops it.
func NewDirStore(dir string, o DirOptions) (*DirStore, error) {
	if o.TTL <= 0 {
		o.TTL = time.Hour
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 512 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("artifact store: %w", err)
	}
	s := &DirStore{root: dir, opts: o, items: map[string]*Item{}, stop: make(chan struct{})}
	s.load()
	go SweepEvery(s.stop, s.opts.TTL, s.Sweep)
	return s, nil
}

// Close stops the sweeper. Kept items stay on disk for the next start.
func (s *DirStore) Close() { s.once.Do(func() { close(s.stop) }) }

// load rebuilds the index from disk, dropping expired or broken items.
func (s *DirStore) load() {
	ents, _ := os.ReadDir(s.root)
	for _, e := range ents {
		var it Item
		b, err := os.ReadFile(filepath.Join(s.root, e.Name(), "item.json"))
		if err != nil || json.Unmarshal(b, &it) != nil || it.ID != e.Name() || !s.opts.Now().Before(it.Expires) {
			_ = os.RemoveAll(filepath.Join(s.root, e.Name()))
			continue
		}
		s.items[it.ID] = &it
		s.used += it.Bytes
	}
}

// SweepEvery calls sweep every quarter of ttl (plus a second, at most a
// minute) until stop is closed: how often a store drops expired items.
func SweepEvery(stop <-chan struct{}, ttl time.Duration, sweep func()) {
	t := time.NewTicker(min(ttl/4+time.Second, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			sweep()
		}
	}
}

// Sweep removes every expired item now.
func (s *DirStore) Sweep() {
	now := s.opts.Now()
	s.mu.Lock()
	var gone []string
	for id, it := range s.items {
		if !now.Before(it.Expires) {
			gone = append(gone, id)
			s.forget(id)
		}
	}
	s.mu.Unlock()
	for _, id := range gone {
		_ = os.RemoveAll(filepath.Join(s.root, id))
	}
}

// forget drops id from the index; the caller holds mu and removes the files.
func (s *DirStore) forget(id string) {
	if it := s.items[id]; it != nil {
		s.used -= it.Bytes
		delete(s.items, id)
	}
}

// begin creates the item's directory and returns a Root on its files.
func (s *DirStore) begin(ctx context.Context, id string) (*Item, *Root, error) {
	if err := CheckID(id); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	_, exists := s.items[id]
	s.mu.Unlock()
	if exists {
		return nil, nil, fmt.Errorf("item %s already exists", id)
	}
	dir := filepath.Join(s.root, id, "files")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	r, err := OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	now := s.opts.Now()
	it := &Item{ID: id, Owner: tenant.From(ctx), Created: now.UTC(), Expires: now.Add(s.opts.TTL).UTC(), Files: []Entry{}}
	return it, r, nil
}

// reserve makes room for n more bytes by evicting the oldest other items;
// false when n cannot fit at all.
func (s *DirStore) reserve(self string, n int64) bool {
	if n > s.opts.MaxBytes {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.used+n > s.opts.MaxBytes {
		oldest := ""
		for id, it := range s.items {
			if id != self && (oldest == "" || it.Created.Before(s.items[oldest].Created)) {
				oldest = id
			}
		}
		if oldest == "" {
			return false
		}
		slog.Info("artifact store full: evicting oldest item", "id", oldest)
		s.forget(oldest)
		_ = os.RemoveAll(filepath.Join(s.root, oldest))
	}
	s.used += n
	return true
}

// commit records the finished item (its bytes are already reserved).
func (s *DirStore) commit(it *Item) error {
	sort.Slice(it.Files, func(i, j int) bool { return it.Files[i].Path < it.Files[j].Path })
	b, _ := json.Marshal(it)
	if err := atomicfile.WriteFile(filepath.Join(s.root, it.ID, "item.json"), b, 0o600); err != nil {
		return err
	}
	s.mu.Lock()
	s.items[it.ID] = it
	s.mu.Unlock()
	return nil
}

// abort releases an unfinished item.
func (s *DirStore) abort(it *Item) {
	s.mu.Lock()
	s.used -= it.Bytes
	s.mu.Unlock()
	_ = os.RemoveAll(filepath.Join(s.root, it.ID))
}

// Keep implements Store.
func (s *DirStore) Keep(ctx context.Context, id string, src *Root, paths []string) (Item, error) {
	it, dst, err := s.begin(ctx, id)
	if err != nil {
		return Item{}, err
	}
	defer dst.Close()
	for _, p := range paths {
		if err := s.keepOne(it, src, dst, p); err != nil {
			it.Skipped = append(it.Skipped, p+": "+err.Error())
		}
	}
	if err := s.commit(it); err != nil {
		s.abort(it)
		return Item{}, err
	}
	return *it, nil
}

func (s *DirStore) keepOne(it *Item, src, dst *Root, p string) error {
	f, err := src.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if !s.reserve(it.ID, f.Size) {
		return fmt.Errorf("%d bytes do not fit the artifact store (CODEXEC_ARTIFACT_MAX_BYTES=%d): %w", f.Size, s.opts.MaxBytes, ErrTooLarge)
	}
	w, err := dst.Write(f.Path, f, WriteOptions{Mode: f.Mode, Max: f.Size})
	if err != nil {
		s.release(f.Size)
		return err
	}
	it.Bytes += f.Size
	it.Files = append(it.Files, Entry{Path: w.Path, Size: w.Size, MTime: f.MTime, Type: "file", Mode: f.Mode})
	return nil
}

func (s *DirStore) release(n int64) {
	s.mu.Lock()
	s.used -= n
	s.mu.Unlock()
}

// Put implements Store.
func (s *DirStore) Put(ctx context.Context, id, p string, r io.Reader, o WriteOptions) (Item, Written, error) {
	if _, err := Clean(p); err != nil {
		return Item{}, Written{}, err
	}
	it, dst, err := s.begin(ctx, id)
	if err != nil {
		return Item{}, Written{}, err
	}
	defer dst.Close()
	// The size is known only after writing (o.Max bounds it): write first,
	// then make room, so a small upload never evicts for a worst case.
	w, err := dst.Write(p, r, WriteOptions{Mode: o.Mode, Max: o.Max, Overwrite: true})
	if err != nil {
		s.abort(it)
		return Item{}, Written{}, err
	}
	if !s.reserve(id, w.Size) {
		s.abort(it)
		return Item{}, Written{}, fmt.Errorf("%d bytes do not fit the staging area (CODEXEC_ARTIFACT_MAX_BYTES=%d): %w", w.Size, s.opts.MaxBytes, ErrTooLarge)
	}
	it.Bytes = w.Size
	it.Files = append(it.Files, Entry{Path: w.Path, Size: w.Size, MTime: s.opts.Now().UTC(), Type: "file", Mode: o.Mode})
	if err := s.commit(it); err != nil {
		s.abort(it)
		return Item{}, Written{}, err
	}
	return *it, w, nil
}

// Get implements Store.
func (s *DirStore) Get(ctx context.Context, id string) (Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[id]
	if it == nil || !tenant.Owns(ctx, it.Owner) || !s.opts.Now().Before(it.Expires) {
		return Item{}, NotFound(id)
	}
	return *it, nil
}

// open returns a Root on a live item of the caller.
func (s *DirStore) open(ctx context.Context, id string) (Item, *Root, error) {
	it, err := s.Get(ctx, id)
	if err != nil {
		return Item{}, nil, err
	}
	r, err := OpenRoot(filepath.Join(s.root, id, "files"))
	if err != nil {
		return Item{}, nil, NotFound(id) // evicted or swept meanwhile
	}
	return it, r, nil
}

// Read implements Store.
func (s *DirStore) Read(ctx context.Context, id, p string, offset, length, max int64) ([]byte, Entry, error) {
	it, r, err := s.open(ctx, id)
	if err != nil {
		return nil, Entry{}, err
	}
	defer r.Close()
	rel, err := Clean(p)
	if err != nil {
		return nil, Entry{}, err
	}
	if _, ok := it.Has(rel); !ok {
		return nil, Entry{}, fmt.Errorf("%s: %w in %s (list_files shows its files)", rel, ErrNotFound, id)
	}
	return r.Read(rel, offset, length, max)
}

// CopyTo implements Store.
func (s *DirStore) CopyTo(ctx context.Context, id string, dst *Root) ([]Written, error) {
	it, r, err := s.open(ctx, id)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []Written
	for _, e := range it.Files {
		f, err := r.Open(e.Path)
		if err != nil {
			return out, err
		}
		w, err := dst.Write(e.Path, f, WriteOptions{Mode: f.Mode}) // the kept file's own mode
		f.Close()
		if err != nil {
			return out, fmt.Errorf("upload %s: %w", id, err)
		}
		out = append(out, w)
	}
	return out, nil
}

// List implements Store.
func (s *DirStore) List(ctx context.Context) []Item {
	now := s.opts.Now()
	s.mu.Lock()
	var out []Item
	for _, it := range s.items {
		if tenant.Owns(ctx, it.Owner) && now.Before(it.Expires) {
			out = append(out, *it)
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out
}
