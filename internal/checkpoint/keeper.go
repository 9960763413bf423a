package checkpoint

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/tenant"
)

// Blobs is where checkpoints are kept: the blob store of uploads and
// artifacts (files.DirStore under the data dir, or the S3 store shared by
// replicas), opened on its own directory or prefix. Items are owned by the
// principal of the context they are written with; another principal's
// item is not found.
type Blobs interface {
	Put(ctx context.Context, id, path string, r io.Reader, o files.WriteOptions) (files.Item, files.Written, error)
	Read(ctx context.Context, id, path string, offset, length, max int64) ([]byte, files.Entry, error)
	Remove(ctx context.Context, id string) error
}

// ErrStoreFull is returned when a checkpoint would take the checkpoints
// past their total bound.
var ErrStoreFull = errors.New("the checkpoint store is full")

// Record is what is kept about a session's latest checkpoint beside the
// checkpoint itself: enough to list the session as paused and to resume
// it after a restart.
type Record struct {
	ID           string    `json:"id"`
	Owner        string    `json:"owner"`
	Kind         string    `json:"kind"`
	Language     string    `json:"language"`
	Name         string    `json:"name,omitempty"`
	Description  string    `json:"description,omitempty"`
	WorkingDir   string    `json:"working_dir,omitempty"`
	StartedAt    time.Time `json:"started_at"`
	LastActivity time.Time `json:"last_activity"`
	Executions   int       `json:"executions"`
	// Blob is the checkpoint's item in the blob store, Bytes its size.
	Blob    string    `json:"blob"`
	Bytes   int64     `json:"bytes"`
	TakenAt time.Time `json:"taken_at"`
	// Auto: taken automatically while the session ran.
	Auto   bool   `json:"auto,omitempty"`
	Report Report `json:"report"`
	// Secrets are the carried values named like secrets (fork_session
	// copies them only when allowed).
	Secrets []string `json:"secrets,omitempty"`
	// Network are the session's network rules (package egress), carried
	// to the session resumed or forked from this checkpoint.
	Network []string `json:"network,omitempty"`
}

// KeeperOptions configure a Keeper.
type KeeperOptions struct {
	// Records keep the records; nil: DirRecords in Dir.
	Records Records
	// Dir holds one record per session, NAME.json, when Records is nil.
	Dir string
	// Sealer encrypts checkpoints at rest; nil keeps them plain.
	Sealer *Sealer
	// MaxBytes bounds one checkpoint; MaxTotal all of them.
	MaxBytes, MaxTotal int64
}

// Keeper keeps each session's latest checkpoint — sealed, in the blob
// store, owned by the session's principal — and its record on disk, within
// a total bound. Sessions are named by the caller (a file-name-safe name
// per owner and id). Safe for concurrent use; calls for one name must not
// overlap.
type Keeper struct {
	blobs Blobs
	o     KeeperOptions
	mu    sync.Mutex
	sizes map[string]int64 // by name
}

// NewKeeper returns a Keeper of checkpoints in blobs.
func NewKeeper(blobs Blobs, o KeeperOptions) *Keeper {
	if o.Records == nil {
		o.Records = DirRecords{Dir: o.Dir}
	}
	return &Keeper{blobs: blobs, o: o, sizes: map[string]int64{}}
}

// blobPath is the one file of a checkpoint item.
const blobPath = "checkpoint"

// Load returns the records a previous server left, each with the name
// nameOf gives it (a record stored under another name is ignored).
func (k *Keeper) Load(nameOf func(Record) string) []Record {
	all, err := k.o.Records.List(context.Background())
	if err != nil {
		slog.Error("checkpoint records unavailable", "err", err)
		return nil
	}
	var out []Record
	for name, rec := range all {
		if nameOf(rec) != name {
			slog.Warn("ignoring a checkpoint record under another name", "name", name)
			continue
		}
		k.mu.Lock()
		k.sizes[name] = rec.Bytes
		k.mu.Unlock()
		out = append(out, rec)
	}
	return out
}

// Find returns principal owner's record of session (or context name)
// idOrName from the records, or ErrNoRecord.
func (k *Keeper) Find(ctx context.Context, owner, idOrName string) (Record, error) {
	return k.o.Records.Get(ctx, owner, idOrName)
}

// Store seals plain, stores it as a new item owned by rec.Owner, and
// records it as session name's checkpoint (rec with Blob and Bytes set,
// returned); then drops the checkpoint it replaces, old ("" for none).
func (k *Keeper) Store(ctx context.Context, name string, rec Record, plain []byte, old string) (Record, error) {
	id := "ck_" + strings.ReplaceAll(name, "@", "_") + "_" + rand.Text()[:10]
	sealed := k.o.Sealer.Seal(plain, AAD(rec.Owner, rec.ID, id))
	n := int64(len(sealed))
	if err := k.room(ctx, name, n); err != nil {
		return Record{}, err
	}
	octx := tenant.With(ctx, rec.Owner)
	if _, _, err := k.blobs.Put(octx, id, blobPath, bytes.NewReader(sealed), files.WriteOptions{Mode: 0o600, Max: n}); err != nil {
		return Record{}, fmt.Errorf("store the checkpoint: %w", err)
	}
	rec.Blob, rec.Bytes = id, n
	if err := k.record(ctx, name, rec); err != nil {
		k.drop(rec.Owner, id)
		return Record{}, err
	}
	k.mu.Lock()
	k.sizes[name] = n
	k.mu.Unlock()
	if old != "" {
		k.drop(rec.Owner, old)
	}
	return rec, nil
}

// room refuses a checkpoint of n bytes for name that would take the
// checkpoints past MaxTotal: those of the shared records when they are
// Bounded (every replica's), else those this Keeper stored. Shared, it is
// checked again, atomically, when the record is written (record): this
// check only spares the upload of a checkpoint that cannot fit.
func (k *Keeper) room(ctx context.Context, name string, n int64) error {
	total := k.others(name)
	if b, ok := k.o.Records.(Bounded); ok {
		var err error
		if total, err = b.Total(ctx, name); err != nil {
			return fmt.Errorf("record the checkpoint: %w", err)
		}
	}
	if total+n > k.o.MaxTotal {
		return k.full(total, n)
	}
	return nil
}

// full is the refusal of a checkpoint of n bytes beside total.
func (k *Keeper) full(total, n int64) error {
	return fmt.Errorf("%w: checkpoints hold %d bytes and this one needs %d (CODEXEC_CHECKPOINT_MAX_TOTAL=%d); close paused sessions first",
		ErrStoreFull, total, n, k.o.MaxTotal)
}

// record writes rec as name's record, within MaxTotal when the records
// are Bounded.
func (k *Keeper) record(ctx context.Context, name string, rec Record) error {
	b, ok := k.o.Records.(Bounded)
	if !ok {
		if err := k.o.Records.Put(ctx, name, rec); err != nil {
			return fmt.Errorf("record the checkpoint: %w", err)
		}
		return nil
	}
	err := b.PutWithin(ctx, name, rec, k.o.MaxTotal)
	var full *FullError
	if errors.As(err, &full) {
		return k.full(full.Total, rec.Bytes)
	}
	if err != nil {
		return fmt.Errorf("record the checkpoint: %w", err)
	}
	return nil
}

// FullError is Bounded.PutWithin's refusal: Total is the size of the
// other recorded checkpoints.
type FullError struct{ Total int64 }

func (e *FullError) Error() string {
	return fmt.Sprintf("%v: the other checkpoints hold %d bytes", ErrStoreFull, e.Total)
}

func (e *FullError) Unwrap() error { return ErrStoreFull }

// others is the size of every checkpoint but name's that this Keeper
// stored.
func (k *Keeper) others(name string) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	var total int64
	for n, b := range k.sizes {
		if n != name {
			total += b
		}
	}
	return total
}

// Read returns the plain checkpoint of rec, authenticated when sealed. A
// checkpoint that is gone (expired, removed) is files.ErrNotFound.
func (k *Keeper) Read(ctx context.Context, rec Record) ([]byte, error) {
	b, _, err := k.blobs.Read(tenant.With(ctx, rec.Owner), rec.Blob, blobPath, 0, 0, k.o.MaxBytes+64<<10)
	if err != nil {
		return nil, fmt.Errorf("read the checkpoint of %s: %w", rec.ID, err)
	}
	plain, err := k.o.Sealer.Open(b, AAD(rec.Owner, rec.ID, rec.Blob))
	if err != nil {
		return nil, fmt.Errorf("the checkpoint of %s: %w", rec.ID, err)
	}
	return plain, nil
}

// Forget removes session name's record and its checkpoint blob ("" for
// none): the session is closed for good.
func (k *Keeper) Forget(name, owner, blob string) {
	k.mu.Lock()
	delete(k.sizes, name)
	k.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.o.Records.Delete(ctx, name); err != nil {
		slog.Warn("checkpoint record not removed", "name", name, "err", err)
	}
	k.drop(owner, blob)
}

// drop removes a checkpoint item nothing refers to any more.
func (k *Keeper) drop(owner, id string) {
	if id == "" {
		return
	}
	if err := k.blobs.Remove(tenant.With(context.Background(), owner), id); err != nil && !errors.Is(err, files.ErrNotFound) {
		slog.Warn("checkpoint not removed", "blob", id, "err", err)
	}
}
