package session

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/atomicfile"
	"github.com/codexec/codexec/internal/checkpoint"
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

// CheckpointOptions configure pause, resume, fork and automatic
// checkpoints. They apply when Deps.Checkpoints is set. Zero values:
// MaxBytes 64 MiB, MaxTotal 1 GiB, Auto off, AutoMaxCost 1 s, Spares none,
// MaxFork 10, Timeout 60 s.
type CheckpointOptions struct {
	// Dir holds one record per paused session (and per live session with
	// an automatic checkpoint), so they survive a restart.
	Dir string
	// Sealer encrypts checkpoints at rest; nil keeps them plain.
	Sealer *checkpoint.Sealer
	// MaxBytes bounds one session's checkpoint; MaxTotal all of them.
	MaxBytes, MaxTotal int64
	// Auto is the quiet period after a run before a live session is
	// checkpointed automatically (what a resume after a kill -9 restores).
	Auto time.Duration
	// AutoMaxCost: after an automatic checkpoint that took longer, the
	// next waits twenty times as long.
	AutoMaxCost time.Duration
	// IdleClose closes idle sessions instead of pausing them.
	IdleClose bool
	// Spares is how many started interpreters per language wait, idle and
	// empty, to receive a checkpoint (a resume or fork child needs no
	// interpreter start-up).
	Spares int
	// MaxFork bounds fork_session's count.
	MaxFork int
	// Timeout bounds one checkpoint or restore inside the interpreter.
	Timeout time.Duration
}

func (o CheckpointOptions) withDefaults() CheckpointOptions {
	if o.MaxBytes <= 0 {
		o.MaxBytes = 64 << 20
	}
	if o.MaxTotal <= 0 {
		o.MaxTotal = 1 << 30
	}
	if o.AutoMaxCost <= 0 {
		o.AutoMaxCost = time.Second
	}
	if o.MaxFork <= 0 {
		o.MaxFork = 10
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	return o
}

// ErrCheckpointsOff is returned by pause, resume and fork when the server
// keeps no checkpoints.
var ErrCheckpointsOff = errors.New("session checkpoints are not enabled on this server")

// Record is what the server keeps about a session's latest checkpoint,
// beside the checkpoint itself: enough to list the session as paused and
// to resume it after a restart.
type Record struct {
	ID           string            `json:"id"`
	Owner        string            `json:"owner"`
	Kind         string            `json:"kind"`
	Language     string            `json:"language"`
	Name         string            `json:"name,omitempty"`
	Description  string            `json:"description,omitempty"`
	WorkingDir   string            `json:"working_dir,omitempty"`
	StartedAt    time.Time         `json:"started_at"`
	LastActivity time.Time         `json:"last_activity"`
	Executions   int               `json:"executions"`
	Blob         string            `json:"blob"`
	Bytes        int64             `json:"bytes"`
	TakenAt      time.Time         `json:"taken_at"`
	Auto         bool              `json:"auto,omitempty"`
	Report       checkpoint.Report `json:"report"`
	// Secrets are the carried values named like secrets (fork_session
	// copies them only when allowed).
	Secrets []string `json:"secrets,omitempty"`
}

func (r Record) key() key { return key{r.Owner, r.ID} }

// blobPath is the one file of a checkpoint item.
const blobPath = "checkpoint"

// recordPath is where the record of session k lives.
func (m *Manager) recordPath(k key) string {
	return filepath.Join(m.opts.Checkpoints.Dir, storageName(k)+".json")
}

// saveRecord writes rec durably.
func (m *Manager) saveRecord(rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(m.recordPath(rec.key()), b, 0o600)
}

// loadRecords reads the records a previous server left: each is a paused
// session from now on.
func (m *Manager) loadRecords() {
	dir := m.opts.Checkpoints.Dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		slog.Error("checkpoint records unavailable", "dir", dir, "err", err)
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") || atomicfile.IsTemp(e.Name()) {
			continue
		}
		var rec Record
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || json.Unmarshal(b, &rec) != nil || storageName(rec.key())+".json" != e.Name() {
			slog.Warn("ignoring an unreadable checkpoint record", "file", e.Name(), "err", err)
			continue
		}
		m.paused[rec.key()] = &pausedSession{rec: rec}
		m.ckBytes[rec.key()] = rec.Bytes
	}
	if len(m.paused) > 0 {
		slog.Info("paused sessions found", "count", len(m.paused))
	}
}

// newBlobID names a new checkpoint of session k (ids are write-once).
func newBlobID(k key) string {
	return "ck_" + strings.ReplaceAll(storageName(k), "@", "_") + "_" + rand.Text()[:10]
}

// ownerCtx is ctx carrying k's owner, whose items the store returns.
func ownerCtx(ctx context.Context, k key) context.Context {
	return tenant.With(ctx, k.owner)
}

// putBlob seals and stores a plain checkpoint of session k as a new item,
// within the total bound; it returns the item id and the stored size.
func (m *Manager) putBlob(ctx context.Context, k key, plain []byte) (string, int64, error) {
	o := m.opts.Checkpoints
	id := newBlobID(k)
	sealed := o.Sealer.Seal(plain, checkpoint.AAD(k.owner, k.id, id))
	n := int64(len(sealed))
	m.mu.Lock()
	var total int64
	for ok, b := range m.ckBytes {
		if ok != k {
			total += b
		}
	}
	m.mu.Unlock()
	if total+n > o.MaxTotal {
		return "", 0, fmt.Errorf("%w: checkpoints hold %d bytes and this one needs %d (CODEXEC_CHECKPOINT_MAX_TOTAL=%d); close paused sessions first",
			ErrFull, total, n, o.MaxTotal)
	}
	_, _, err := m.deps.Checkpoints.Put(ownerCtx(ctx, k), id, blobPath, bytes.NewReader(sealed), files.WriteOptions{Mode: 0o600, Max: n})
	if err != nil {
		return "", 0, fmt.Errorf("store the checkpoint: %w", err)
	}
	return id, n, nil
}

// readBlob returns the plain checkpoint of rec, authenticated when sealed.
func (m *Manager) readBlob(ctx context.Context, rec Record) ([]byte, error) {
	o := m.opts.Checkpoints
	max := o.MaxBytes + 64<<10
	b, _, err := m.deps.Checkpoints.Read(ownerCtx(ctx, rec.key()), rec.Blob, blobPath, 0, 0, max)
	if err != nil {
		return nil, fmt.Errorf("read the checkpoint of %s: %w", rec.ID, err)
	}
	plain, err := o.Sealer.Open(b, checkpoint.AAD(rec.Owner, rec.ID, rec.Blob))
	if err != nil {
		return nil, fmt.Errorf("the checkpoint of %s: %w", rec.ID, err)
	}
	return plain, nil
}

// dropBlob removes a checkpoint item that nothing refers to any more.
func (m *Manager) dropBlob(k key, id string) {
	if id == "" {
		return
	}
	if err := m.deps.Checkpoints.Remove(ownerCtx(context.Background(), k), id); err != nil && !errors.Is(err, files.ErrNotFound) {
		slog.Warn("checkpoint not removed", "blob", id, "err", err)
	}
}

// forget removes session k's record and checkpoint (closed for good).
func (m *Manager) forget(k key, blob string) {
	if !m.checkpoints() {
		return
	}
	m.mu.Lock()
	delete(m.ckBytes, k)
	m.mu.Unlock()
	if err := os.Remove(m.recordPath(k)); err != nil && !errors.Is(err, os.ErrNotExist) {
		slog.Warn("checkpoint record not removed", "session_id", k.id, "err", err)
	}
	m.dropBlob(k, blob)
}

// checkpoints reports whether this Manager keeps checkpoints.
func (m *Manager) checkpoints() bool { return m.deps.Checkpoints != nil }

// CheckpointsEnabled reports whether sessions can be paused, resumed and
// forked here.
func (m *Manager) CheckpointsEnabled() bool { return m != nil && m.checkpoints() }
