package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/codexec/codexec/internal/atomicfile"
)

// ErrNoRecord is Records.Get's answer when the principal has no record of
// that session.
var ErrNoRecord = errors.New("no checkpoint record")

// Records keeps each session's checkpoint record, by the session's
// storage name (its id, suffixed with its owner's tenant tag). Two
// implementations: DirRecords (files under the data dir, this server's
// own) and a shared database (pgstore.Records), which lets any replica
// resume a session another one paused. Safe for concurrent use.
type Records interface {
	// Put writes rec as name's record, replacing the one it had.
	Put(ctx context.Context, name string, rec Record) error
	// Get returns principal owner's record of session id idOrName, or of
	// the context named idOrName; another principal's is ErrNoRecord, as
	// is none.
	Get(ctx context.Context, owner, idOrName string) (Record, error)
	// Delete removes name's record; none is no error.
	Delete(ctx context.Context, name string) error
	// List returns every record by name.
	List(ctx context.Context) (map[string]Record, error)
}

// Bounded is implemented by Records shared by replicas (pgstore.Records):
// they hold the records of every checkpoint in the shared blob store, so
// the total bound (CODEXEC_CHECKPOINT_MAX_TOTAL) is enforced on them,
// across replicas, instead of on what one server wrote.
type Bounded interface {
	Records
	// Total is the size of every recorded checkpoint but name's.
	Total(ctx context.Context, except string) (int64, error)
	// PutWithin is Put, refused with an error wrapping ErrStoreFull when
	// the recorded checkpoints, name's replaced by rec, would exceed max
	// bytes. Atomic among replicas: two racing writes cannot both pass.
	PutWithin(ctx context.Context, name string, rec Record, max int64) error
}

// DirRecords keeps one record per file, NAME.json, in a directory.
type DirRecords struct{ Dir string }

var _ Records = DirRecords{}

// Put implements Records.
func (d DirRecords) Put(_ context.Context, name string, rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d.Dir, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(d.path(name), b, 0o600)
}

// Get implements Records: a scan of the directory (the server reads every
// record once at start and keeps them; this serves the rare rest).
func (d DirRecords) Get(ctx context.Context, owner, idOrName string) (Record, error) {
	all, err := d.List(ctx)
	if err != nil {
		return Record{}, err
	}
	return pick(all, owner, idOrName)
}

// pick is owner's record of id idOrName, else of the context so named.
func pick(all map[string]Record, owner, idOrName string) (Record, error) {
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, byID := range []bool{true, false} {
		for _, n := range names {
			r := all[n]
			if r.Owner == owner && ((byID && r.ID == idOrName) || (!byID && r.Name != "" && r.Name == idOrName)) {
				return r, nil
			}
		}
	}
	return Record{}, fmt.Errorf("%w: %s", ErrNoRecord, idOrName)
}

// Delete implements Records.
func (d DirRecords) Delete(_ context.Context, name string) error {
	if err := os.Remove(d.path(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// List implements Records; an unreadable file is left out.
func (d DirRecords) List(context.Context) (map[string]Record, error) {
	ents, err := os.ReadDir(d.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Record{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]Record{}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || atomicfile.IsTemp(e.Name()) {
			continue
		}
		var rec Record
		b, err := os.ReadFile(filepath.Join(d.Dir, e.Name()))
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			slog.Warn("ignoring an unreadable checkpoint record", "file", e.Name(), "err", err)
			continue
		}
		out[name] = rec
	}
	return out, nil
}

func (d DirRecords) path(name string) string { return filepath.Join(d.Dir, name+".json") }
