package logindex

import (
	"context"
	"time"

	"github.com/codexec/codexec/internal/execlog"
)

// History is the execution history, whatever stores it: the embedded one
// (JSONL files indexed here, Embedded) or a shared database. Every
// implementation answers Search and Get with the same results for the same
// entries (the query semantics of Query and MatchExpr), returns the errors
// documented here (ErrInvalidQuery, ErrNotFound, ErrUnavailable, wrapped),
// and applies Retention with ApplyRetention's rules.
type History interface {
	// Append records one execution entry (type "execution"); an entry
	// whose id is already recorded is ignored (the first one wins).
	Append(ctx context.Context, e execlog.Entry) error
	// Search returns the newest matching executions of ctx's principal
	// and the number of matches (counted up to CountCap+1).
	Search(ctx context.Context, q Query) ([]Hit, int, error)
	// Get returns one of ctx's principal's executions.
	Get(ctx context.Context, id string) (execlog.Entry, error)
	// ApplyRetention drops the history expired as of now.
	ApplyRetention(ctx context.Context, now time.Time, r Retention) error
}

// Embedded is the history of one server: entries appended to Log's JSONL
// files, searched through the Index of the same directory.
type Embedded struct {
	Log *execlog.Logger
	*Index
}

// Append writes e through the logger (AppendExecution); the index picks it
// up before the next query.
func (h Embedded) Append(_ context.Context, e execlog.Entry) error { return h.Log.AppendExecution(e) }

var _ History = Embedded{}
