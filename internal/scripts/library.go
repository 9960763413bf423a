package scripts

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/errcode"
	"github.com/codexec/codexec/internal/runtime"
)

// Library is one principal's script library, whatever stores it: the
// directories of a Store (Files) or a shared database. Implementations
// give the same answers for the same calls: Save validates with Prepare and
// keeps every earlier version, Search ranks with Rank, and an unknown
// script or version is ErrNotFound (wrapped). Safe for concurrent use.
type Library interface {
	// Save stores in as the current version of its name (see Store.Save).
	Save(ctx context.Context, in SaveInput) (Script, error)
	// Get returns the current version of name (version 0) or an earlier one.
	Get(ctx context.Context, name string, version int) (Script, error)
	// List returns every script's metadata, optionally filtered by
	// canonical language and by tag (case-insensitive), sorted by name.
	List(ctx context.Context, lang, tag string) ([]Meta, error)
	// Search ranks the scripts against query (see Rank).
	Search(ctx context.Context, query string) ([]Match, error)
	// RecordRun updates run_count, last_run_at and last_run_success.
	RecordRun(ctx context.Context, name string, at time.Time, success bool) error
}

// Libraries hands each principal (tenant.From(ctx)) its own Library.
type Libraries interface {
	For(ctx context.Context) (Library, error)
}

// Files serves Libraries from s's directories (the embedded store).
func Files(s *Store) Libraries { return fileLibraries{s} }

type fileLibraries struct{ s *Store }

func (f fileLibraries) For(ctx context.Context) (Library, error) {
	st, err := f.s.For(ctx)
	if err != nil {
		return nil, err
	}
	return fileLibrary{st}, nil
}

// fileLibrary adapts a Store's methods (which need no context: they touch
// only local files) to Library.
type fileLibrary struct{ s *Store }

func (f fileLibrary) Save(_ context.Context, in SaveInput) (Script, error) { return f.s.Save(in) }
func (f fileLibrary) Get(_ context.Context, name string, version int) (Script, error) {
	return f.s.Get(name, version)
}
func (f fileLibrary) List(_ context.Context, lang, tag string) ([]Meta, error) {
	return f.s.List(lang, tag)
}
func (f fileLibrary) Search(_ context.Context, query string) ([]Match, error) {
	return f.s.Search(query)
}
func (f fileLibrary) RecordRun(_ context.Context, name string, at time.Time, success bool) error {
	return f.s.RecordRun(name, at, success)
}

// Prepare validates save_script's input and returns it with its language
// canonical and nil lists made empty; invalid input is ErrInvalid (wrapped).
func Prepare(in SaveInput) (SaveInput, error) {
	if err := ValidateName(in.Name); err != nil {
		return SaveInput{}, err
	}
	lang, err := runtime.Normalize(in.Language)
	if err != nil {
		return SaveInput{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if in.Code == "" {
		return SaveInput{}, fmt.Errorf("%w: code is required", ErrInvalid)
	}
	in.Language, in.Tags, in.Packages = lang, nonNil(in.Tags), nonNil(in.Packages)
	return in, nil
}

// Filter keeps the metadata of all matching List's language and tag filters.
func Filter(all []Meta, lang, tag string) []Meta {
	out := []Meta{}
	for _, m := range all {
		if lang != "" && m.Language != lang {
			continue
		}
		if tag != "" && !slices.ContainsFunc(m.Tags, func(t string) bool { return strings.EqualFold(t, tag) }) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// Rank finds, among all (sorted by name), the scripts whose name, tags,
// description or language contain any word of query (case-insensitive
// substring), best first: a word in the name weighs 8, in a tag 4, in the
// description 2, the language 1; equal scores keep all's order. A query
// without words is an error.
func Rank(all []Meta, query string) ([]Match, error) {
	words := tokens(query)
	if len(words) == 0 {
		return nil, errcode.New(errcode.InvalidParams, "query must contain at least one word")
	}
	out := []Match{}
	for _, m := range all {
		if score, rel := scoreOf(m, words); score > 0 {
			out = append(out, Match{Meta: m, Relevance: rel, Score: score})
		}
	}
	slices.SortStableFunc(out, func(a, b Match) int { return b.Score - a.Score })
	return out, nil
}
