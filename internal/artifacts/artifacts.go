// Package artifacts detects the files a run created, modified or deleted in
// its working directory, by snapshotting names, sizes and mtimes before and
// after (seed 000 "Artifact Tracking"). Snapshots are bounded: at most
// MaxEntries files and MaxDepth directory levels are walked, so pointing a run
// at a huge tree costs a bounded amount of time; Snapshot.Partial reports it.
package artifacts

import (
	"io/fs"
	"path/filepath"
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
}

// Take walks dir and records every regular file. A missing dir gives an
// empty snapshot. Symlinks are recorded as entries but never followed.
func Take(dir string) Snapshot {
	s := Snapshot{files: map[string]fileInfo{}}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if rel != "." && depth(rel) >= MaxDepth {
				s.Partial = true
				return filepath.SkipDir
			}
			return nil
		}
		if len(s.files) >= MaxEntries {
			s.Partial = true
			return filepath.SkipAll
		}
		if info, err := d.Info(); err == nil {
			s.files[filepath.ToSlash(rel)] = fileInfo{size: info.Size(), mtime: info.ModTime()}
		}
		return nil
	})
	return s
}

func depth(rel string) int {
	n := 1
	for _, c := range rel {
		if c == filepath.Separator {
			n++
		}
	}
	return n
}

// Compare returns what changed from before to after.
func Compare(before, after Snapshot) Diff {
	d := Diff{Created: []string{}, Modified: []string{}, Deleted: []string{}}
	for name, a := range after.files {
		b, ok := before.files[name]
		switch {
		case !ok:
			d.Created = append(d.Created, name)
		case a.size != b.size || !a.mtime.Equal(b.mtime):
			d.Modified = append(d.Modified, name)
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
