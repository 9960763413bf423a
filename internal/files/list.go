package files

import (
	"os"
	"path"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// MaxDepth bounds recursive listings and usage walks.
const MaxDepth = 16

// Listing is the result of List.
type Listing struct {
	Entries []Entry `json:"entries"`
	// Truncated is true when limit entries were reached before the end.
	Truncated bool `json:"truncated"`
}

// List describes the entries of directory rel ("" = the root), sorted by
// path; with recursive it descends into subdirectories (never through a
// symlink, at most MaxDepth levels). At most limit entries are returned.
// Symlinks, FIFOs and the like are listed with their type but not followed.
func (r *Root) List(p string, recursive bool, limit int) (Listing, error) {
	return within(r, func() (Listing, error) { return r.list(p, recursive, limit) })
}

func (r *Root) list(p string, recursive bool, limit int) (Listing, error) {
	rel, err := r.clean(p)
	if err != nil {
		return Listing{}, err
	}
	l := Listing{Entries: []Entry{}}
	err = r.walk(rel, recursive, 0, limit, &l)
	sort.Slice(l.Entries, func(i, j int) bool { return l.Entries[i].Path < l.Entries[j].Path })
	return l, err
}

func (r *Root) walk(rel string, recursive bool, depth, limit int, l *Listing) error {
	fd, err := r.openBeneath(rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(fd), rel)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	sort.Strings(names)
	var subdirs []string
	for _, name := range names {
		if len(l.Entries) >= limit {
			l.Truncated = true
			return nil
		}
		var st unix.Stat_t
		if r.isHidden(path.Join(rel, name)) || unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue // hidden, or vanished meanwhile
		}
		e := entryOf(path.Join(rel, name), &st)
		l.Entries = append(l.Entries, e)
		if e.Type == "dir" {
			subdirs = append(subdirs, e.Path)
		}
	}
	if !recursive || depth+1 >= MaxDepth {
		return nil
	}
	for _, sub := range subdirs {
		if err := r.walk(sub, true, depth+1, limit, l); err != nil && !l.Truncated {
			continue // a directory removed or swapped for a link meanwhile: skip it
		}
		if l.Truncated {
			return nil
		}
	}
	return nil
}

// Usage returns the bytes used by regular files beneath the root, counting
// at most maxEntries entries (complete is false when it stopped early).
func (r *Root) Usage(maxEntries int) (total int64, complete bool) {
	l, err := r.List("", true, maxEntries)
	if err != nil {
		return 0, false
	}
	for _, e := range l.Entries {
		if e.Type == "file" {
			total += e.Size
		}
	}
	return total, !l.Truncated
}

// Walk visits every entry beneath the root that is not a directory, with
// its slash-separated path, size and mtime, entering directories (never
// through a symlink, each opened beneath its parent's fd) down to maxDepth
// levels. It stops when visit returns false, and reports whether it saw
// everything. It runs with the root's identity, so it sees exactly what the
// sandbox user can list. Errors (an entry removed meanwhile, a directory
// the sandbox user cannot read) leave that part out.
func (r *Root) Walk(maxDepth int, visit func(rel string, size int64, mtime time.Time) bool) (complete bool) {
	complete, _ = within(r, func() (bool, error) {
		fd, err := unix.Openat(r.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, nil
		}
		w := walker{maxDepth: maxDepth, visit: visit, complete: true, hidden: r.isHidden}
		w.dir(fd, "", 0)
		return w.complete && !w.stopped, nil
	})
	return complete
}

// walker is the state of one Walk.
type walker struct {
	maxDepth          int
	visit             func(string, int64, time.Time) bool
	hidden            func(string) bool
	complete, stopped bool
}

// dir walks the directory fd (which it closes) whose path is rel. A
// directory the identity cannot read is invisible to it, not a gap.
func (w *walker) dir(fd int, rel string, depth int) {
	d := os.NewFile(uintptr(fd), rel)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return
	}
	for _, name := range names {
		p := path.Join(rel, name)
		var st unix.Stat_t
		if w.hidden(p) || unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue // hidden, or vanished meanwhile
		}
		switch {
		case uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR:
			w.stopped = !w.visit(p, st.Size, time.Unix(st.Mtim.Unix()))
		case depth+1 >= w.maxDepth:
			w.complete = false
		default:
			if sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
				w.dir(sub, p, depth+1)
			}
		}
		if w.stopped {
			return
		}
	}
}
