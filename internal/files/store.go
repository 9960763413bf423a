package files

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/errcode"
)

// Item is a set of files kept beyond the workspace they came from: the
// artifacts of a one-shot run (ID = its execution id) or an upload staged for
// a later run (ID = upl_…).
type Item struct {
	ID      string    `json:"id"`
	Owner   string    `json:"owner"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	Files   []Entry   `json:"files"`
	Bytes   int64     `json:"bytes"`
	// Skipped lists paths that were not kept, with the reason.
	Skipped []string `json:"skipped,omitempty"`
}

// Has reports whether the item holds file p (a Clean path).
func (it Item) Has(p string) (Entry, bool) {
	for _, e := range it.Files {
		if e.Path == p {
			return e, true
		}
	}
	return Entry{}, false
}

// Store keeps items for a TTL within a byte budget. Every method takes the
// caller's context: items record the principal of tenant.From(ctx) as their
// owner, and an item owned by someone else is reported as ErrNotFound, never
// as "forbidden", so ids of other tenants cannot be probed. Implementations
// are safe for concurrent use.
//
// Two implementations keep the same contract: DirStore (the embedded
// default, a directory of the data dir) and the S3-compatible store of
// package s3store (shared by several replicas); package storetest checks
// both with one suite. A store only ever receives bytes and names: what it
// keeps from a workspace it reads through a Root (confined, with the
// sandbox user's rights), and what it writes into one goes through a Root
// too, so no store acts on sandbox paths with the server's rights.
type Store interface {
	// Keep copies the regular files named by paths out of src as item id.
	// Files that are not regular, cannot be read safely or do not fit the
	// budget are skipped (Item.Skipped says why); the rest are kept.
	Keep(ctx context.Context, id string, src *Root, paths []string) (Item, error)
	// Put stores one file read from r (at most o.Max bytes) as a new item.
	Put(ctx context.Context, id, path string, r io.Reader, o WriteOptions) (Item, Written, error)
	// Get returns a live item of the caller.
	Get(ctx context.Context, id string) (Item, error)
	// Read returns a byte range of one file of an item (see Root.Read).
	Read(ctx context.Context, id, path string, offset, length, max int64) ([]byte, Entry, error)
	// CopyTo writes every file of an item beneath dst (no overwriting).
	CopyTo(ctx context.Context, id string, dst *Root) ([]Written, error)
	// List returns the caller's live items, newest first.
	List(ctx context.Context) []Item
}

// NotFound is the error every Store returns for a missing, expired or
// foreign item (errors.Is ErrNotFound), in the same words whichever store
// keeps it.
func NotFound(id string) error {
	return fmt.Errorf("%s: %w (unknown, expired after the artifact TTL, or not yours)", id, ErrNotFound)
}

// CheckID refuses ids that could name something other than one item: empty,
// longer than 128 bytes, starting with a dot, or holding a slash or
// backslash. Stores build directory names and object keys from ids, and
// callers pass ids they read from tool input, so every store checks an id
// before it names anything with it.
func CheckID(id string) error {
	if id == "" || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") || len(id) > 128 {
		return errcode.New(errcode.InvalidParams, "invalid item id %q", id)
	}
	return nil
}
