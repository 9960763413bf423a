// Package artifacts detects the files a run created, modified or deleted in
// its working directory, by snapshotting names, sizes and mtimes before and
// after. Snapshots are bounded: at most
// MaxEntries files and MaxDepth directory levels are walked, so pointing a run
// at a huge tree costs a bounded amount of time; Snapshot.Partial reports it.
package artifacts

import (
	"slices"
	"time"
)

// Bounds on a snapshot walk.
const (
	MaxEntries = 20000
	MaxDepth   = 16
)

type fileInfo struct {
	size  int64
	mtime time.Time
}

// Snapshot is the state of a directory tree at one moment. The zero value is
// an empty snapshot.
type Snapshot struct {
	files   map[string]fileInfo
	Partial bool
}

// Diff lists relative paths (slash-separated, sorted) that changed between
// two snapshots. Slices are never nil so they encode as [] in JSON.
type Diff struct {
	Created  []string `json:"created"`
	Modified []string `json:"modified"`
	Deleted  []string `json:"deleted"`
	// Bytes is the size of the created and modified files: what the run
	// left written (a run's usage, not part of the diff's JSON).
	Bytes int64 `json:"-"`
}

// Tree is a directory tree that can be walked without following links:
// internal/files.Root walks a workspace beneath its directory fd with the
// sandbox user's rights.
type Tree interface {
	// Walk calls visit for every entry that is not a directory, entering
	// directories down to maxDepth levels and never through a symlink; it
	// stops when visit returns false. It reports whether it saw everything
	// (false when it stopped early or left a directory out).
	Walk(maxDepth int, visit func(rel string, size int64, mtime time.Time) bool) (complete bool)
}

// Take records every entry of t that is not a directory (symlinks are
// entries, never followed). A nil t gives an empty snapshot.
func Take(t Tree) Snapshot {
	s := Snapshot{files: map[string]fileInfo{}}
	if t == nil {
		return s
	}
	complete := t.Walk(MaxDepth, func(rel string, size int64, mtime time.Time) bool {
		if len(s.files) >= MaxEntries {
			return false
		}
		s.files[rel] = fileInfo{size: size, mtime: mtime}
		return true
	})
	s.Partial = !complete
	return s
}

// Empty reports whether s saw the whole tree and it held no entries.
func (s Snapshot) Empty() bool { return len(s.files) == 0 && !s.Partial }

// Compare returns what changed from before to after.
func Compare(before, after Snapshot) Diff {
	d := Diff{Created: []string{}, Modified: []string{}, Deleted: []string{}}
	for name, a := range after.files {
		b, ok := before.files[name]
		switch {
		case !ok:
			d.Created, d.Bytes = append(d.Created, name), d.Bytes+a.size
		case a.size != b.size || !a.mtime.Equal(b.mtime):
			d.Modified, d.Bytes = append(d.Modified, name), d.Bytes+a.size
		}
	}
	for name := range before.files {
		if _, ok := after.files[name]; !ok {
			d.Deleted = append(d.Deleted, name)
		}
	}
	slices.Sort(d.Created)
	slices.Sort(d.Modified)
	slices.Sort(d.Deleted)
	return d
}
