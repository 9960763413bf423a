package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/codexec/codexec/internal/files"
)

// MaxEntries bounds the workspace entries one checkpoint carries.
const MaxEntries = 10000

// ErrTooLarge is returned when a checkpoint would exceed its size bound.
var ErrTooLarge = errors.New("checkpoint too large")

// Workspace is a workspace's entries and contents as Archive read them.
type Workspace struct {
	Files []File
	Data  []byte
	// Lost maps each entry not carried to why (a symlink, a FIFO, a file
	// the sandbox user cannot read, …).
	Lost map[string]string
}

// Archive reads the workspace beneath root: directories and regular files
// (through root: beneath it, never through a link, with its identity's
// rights). Other entries are listed in Lost. More than max bytes of file
// content is ErrTooLarge.
func Archive(root *files.Root, max int64) (Workspace, error) {
	l, err := root.List("", true, MaxEntries)
	if err != nil {
		return Workspace{}, fmt.Errorf("list the workspace: %w", err)
	}
	w := Workspace{Lost: map[string]string{}}
	if l.Truncated {
		w.Lost["…"] = fmt.Sprintf("only the first %d entries are carried", MaxEntries)
	}
	var buf bytes.Buffer
	for _, e := range l.Entries {
		switch e.Type {
		case "dir":
			w.Files = append(w.Files, File{Path: e.Path, Mode: uint32(e.Mode), Dir: true})
		case "file":
			if err := w.addFile(root, e, &buf, max); err != nil {
				return Workspace{}, err
			}
		default:
			w.Lost[e.Path] = e.Type + " not carried"
		}
	}
	w.Data = buf.Bytes()
	return w, nil
}

// addFile appends one regular file, or notes why it is not carried.
func (w *Workspace) addFile(root *files.Root, e files.Entry, buf *bytes.Buffer, max int64) error {
	f, err := root.Open(e.Path)
	if err != nil {
		w.Lost[e.Path] = shortErr(e.Path, err)
		return nil
	}
	defer f.Close()
	if int64(buf.Len())+f.Size > max {
		return fmt.Errorf("%w: the workspace holds more than %d bytes", ErrTooLarge, max)
	}
	n, err := io.Copy(buf, io.LimitReader(f, f.Size))
	if err != nil || n != f.Size {
		buf.Truncate(buf.Len() - int(n))
		w.Lost[e.Path] = "changed while read"
		return nil
	}
	w.Files = append(w.Files, File{Path: e.Path, Mode: uint32(f.Mode), Size: n})
	return nil
}

// Extract writes d's workspace beneath root (through root, with its
// identity's rights; paths are checked by files.Clean as any caller's
// path) and returns how many files it wrote and what it could not.
// Directories get their modes last, so a read-only one still receives its
// files.
func Extract(root *files.Root, d Decoded) (int, map[string]string) {
	lost := map[string]string{}
	off, n := int64(0), 0
	for _, f := range d.Header.Files {
		data := d.Data[off : off+f.Size]
		off += f.Size
		var err error
		if f.Dir {
			err = root.Mkdir(f.Path, 0o755)
		} else {
			_, err = root.Write(f.Path, bytes.NewReader(data), files.WriteOptions{Mode: fs.FileMode(f.Mode).Perm(), Overwrite: true})
		}
		if err != nil {
			lost[f.Path] = shortErr(f.Path, err)
		} else if !f.Dir {
			n++
		}
	}
	for _, f := range d.Header.Files {
		if _, failed := lost[f.Path]; f.Dir && !failed && fs.FileMode(f.Mode).Perm() != 0o755 {
			if err := root.Mkdir(f.Path, fs.FileMode(f.Mode).Perm()|0o100); err != nil {
				lost[f.Path] = shortErr(f.Path, err)
			}
		}
	}
	return n, lost
}

// shortErr is err's message without the path it starts with.
func shortErr(p string, err error) string {
	return strings.TrimPrefix(err.Error(), p+": ")
}
