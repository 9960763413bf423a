package runs

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/tenant"
)

// An ended run is kept in the blob store as one item, "run_<execution id>",
// owned by the run's principal, with three files: record.json (a record),
// stdout and stderr (the output as far as it was kept). The item expires
// with the store's TTL and may be evicted by its size cap like any kept
// artifact; reads then fall back to the execution history.

// Files of a stored run.
const (
	recordFile = "record.json"
	stdoutFile = "stdout"
	stderrFile = "stderr"
)

// storeTimeout bounds putting one run's result in the store.
const storeTimeout = time.Minute

// itemID is the store item of run id (ids are checked by validID or made
// by the engine).
func itemID(id string) string { return "run_" + id }

// record is a stored run's record.json.
type record struct {
	ExecutionID string          `json:"execution_id"`
	Tool        string          `json:"tool"`
	Status      string          `json:"status"`
	StartedAt   time.Time       `json:"started_at"`
	EndedAt     time.Time       `json:"ended_at"`
	Dropped     int64           `json:"dropped,omitempty"`
	Result      json.RawMessage `json:"result"`
}

// store puts r's result and output in the store, as r's owner, and reports
// whether they are all there (then r's output leaves memory).
func (m *Manager) store(ctx context.Context, r *run) bool {
	st := m.deps.Store
	if st == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(tenant.With(ctx, r.owner), storeTimeout)
	defer cancel()
	dir, err := os.MkdirTemp(m.opts.Dir, "run-")
	if err != nil {
		slog.Warn("background run: result not stored", "execution_id", r.id, "err", err)
		return false
	}
	defer os.RemoveAll(dir)
	if err := r.writeFiles(dir); err != nil {
		slog.Warn("background run: result not stored", "execution_id", r.id, "err", err)
		return false
	}
	root, err := files.OpenRoot(dir)
	if err != nil {
		return false
	}
	defer root.Close()
	it, err := st.Keep(ctx, itemID(r.id), root, []string{recordFile, stdoutFile, stderrFile})
	if err != nil || len(it.Skipped) > 0 {
		slog.Warn("background run: result not stored whole; it is read from memory while listed", "execution_id", r.id, "err", err, "skipped", it.Skipped)
		return false
	}
	r.markStored()
	return true
}

// writeFiles writes r's stored files into dir.
func (r *run) writeFiles(dir string) error {
	r.mu.Lock()
	rec := record{ExecutionID: r.id, Tool: r.tool, Status: r.status, StartedAt: r.started, EndedAt: r.endTime,
		Dropped: r.stdout.dropped + r.stderr.dropped, Result: r.result}
	out, errOut := r.stdout.buf, r.stderr.buf
	r.mu.Unlock()
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{recordFile: b, stdoutFile: out, stderrFile: errOut} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// loadStored reads run id from the store: ok false when it is not there.
func (m *Manager) loadStored(ctx context.Context, id string, rd Read) (View, bool, error) {
	st := m.deps.Store
	if st == nil {
		return View{}, false, nil
	}
	it, err := st.Get(ctx, itemID(id))
	if err != nil {
		return View{}, false, nil
	}
	e, ok := it.Has(recordFile)
	if !ok {
		return View{}, false, nil
	}
	b, _, err := st.Read(ctx, it.ID, recordFile, 0, 0, max(e.Size, 1))
	var rec record
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil {
		if errors.Is(err, files.ErrNotFound) { // expired or evicted meanwhile
			return View{}, false, nil
		}
		return View{}, true, err
	}
	end := rec.EndedAt
	v := View{ExecutionID: id, Tool: rec.Tool, Status: rec.Status, StartedAt: rec.StartedAt, EndedAt: &end,
		Dropped: rec.Dropped, Result: rec.Result}
	m.readStored(ctx, &v, rd, fileSize(it, stdoutFile), fileSize(it, stderrFile))
	return v, true, nil
}

// fileSize is the size of file name of it (0 when absent).
func fileSize(it files.Item, name string) int64 {
	e, _ := it.Has(name)
	return e.Size
}

// readStored fills v's output from the stored streams (outSize and errSize
// bytes long) at rd's offsets.
func (m *Manager) readStored(ctx context.Context, v *View, rd Read, outSize, errSize int64) {
	v.Stdout, v.NextStdoutOffset = m.readFile(ctx, v.ExecutionID, stdoutFile, rd.StdoutOffset, outSize)
	v.Stderr, v.NextStderrOffset = m.readFile(ctx, v.ExecutionID, stderrFile, rd.StderrOffset, errSize)
	v.More = v.NextStdoutOffset < outSize || v.NextStderrOffset < errSize
}

// readFile reads one stored stream of size bytes from off, as chunk does;
// a store that lost the file reads as nothing at off.
func (m *Manager) readFile(ctx context.Context, id, name string, off, size int64) (string, int64) {
	off = max(off, 0)
	if off >= size || m.deps.Store == nil {
		return "", min(off, size)
	}
	n := min(size-off, ChunkMax)
	b, _, err := m.deps.Store.Read(ctx, itemID(id), name, off, n, n)
	if err != nil {
		slog.Warn("background run: stored output unreadable", "execution_id", id, "file", name, "err", err)
		return "", off
	}
	s, next := chunk(b, 0, off+int64(len(b)) >= size)
	return s, off + next
}
