package execlog

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"github.com/codexec/codexec/internal/atomicfile"
)

// WriteError reports an entry that was not recorded: the log file is as it
// was before the attempt. Its message is meant for users, e.g.
// "execution log not written: no space left on device (/logs/executions-2026-02-09.jsonl)".
type WriteError struct {
	Path string // the log file (or directory) that could not be written
	Err  error
}

// Error says that the entry was not written, why, and where.
func (e *WriteError) Error() string {
	return "execution log not written: " + reason(e.Err) + " (" + e.Path + ")"
}

// Unwrap returns the system error, so errors.Is(err, syscall.ENOSPC) works.
func (e *WriteError) Unwrap() error { return e.Err }

// reason is the system's word for err (e.g. "no space left on device")
// without the operation and path that *PathError repeats.
func reason(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// write appends line to name and returns the offset the entry starts at.
// On error the file is truncated back to its size before the write. l.mu
// must be held.
func (l *Logger) write(name string, line []byte) (int64, error) {
	path := filepath.Join(l.dir, name)
	h, fi, unlock, err := l.lockedOpen(name, path)
	if err != nil {
		return 0, &WriteError{Path: path, Err: err}
	}
	defer unlock()
	before := fi.Size()
	off := before
	// A file that ends where this logger's last append ended is known to
	// end in a newline; any other is checked.
	if before > 0 && before != h.end && !endsLine(h.f, before) {
		line = append([]byte{'\n'}, line...) // end the torn line first
		off++
	}
	if _, err := h.f.Write(line); err != nil {
		h.end = -1
		if terr := h.f.Truncate(before); terr != nil {
			// The fragment stays; the next append starts on a new line.
			slog.Error("execution log: cannot remove a partly written entry", "file", path, "err", terr)
		}
		return 0, &WriteError{Path: path, Err: err}
	}
	h.end = before + int64(len(line))
	return off, nil
}

// Probe checks that an entry could be written now, by writing one byte to
// a temporary file in the log directory and removing it (an empty file
// would not notice a full disk: it needs no data block). It returns nil or
// a *WriteError naming the directory, which Err reports until the next
// successful append.
func (l *Logger) Probe() error {
	err := probe(l.dir)
	if err != nil {
		err = &WriteError{Path: l.dir, Err: err}
	}
	l.mu.Lock()
	l.lastErr = err
	l.mu.Unlock()
	return err
}

func probe(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := atomicfile.CreateTemp(dir)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write([]byte{'\n'})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// endsLine reports whether the file of the given size ends with a newline.
// A read error counts as no: an extra newline only adds an empty line.
func endsLine(f *os.File, size int64) bool {
	var b [1]byte
	_, err := f.ReadAt(b[:], size-1)
	return err == nil && b[0] == '\n'
}

// logFile is a cached append handle.
type logFile struct {
	f *os.File
	// end is the file's size after this logger's latest append to it, -1
	// when unknown.
	end int64
}

// lockedOpen returns name's append handle, flock'ed, with the file's
// current FileInfo. A cached handle whose file was removed or replaced
// (by retention) since it was opened is reopened. l.mu must be held.
func (l *Logger) lockedOpen(name, path string) (*logFile, os.FileInfo, func(), error) {
	for {
		h, fresh, err := l.open(name, path)
		if err != nil {
			return nil, nil, nil, err
		}
		unlock := lockFile(h.f)
		fi, err := h.f.Stat()
		if err != nil {
			unlock()
			return nil, nil, nil, err
		}
		if fresh {
			return h, fi, unlock, nil
		}
		if cur, err := os.Stat(path); err == nil && os.SameFile(cur, fi) {
			return h, fi, unlock, nil
		}
		unlock()
		_ = h.f.Close()
		delete(l.files, name)
	}
}

// lockFile takes an exclusive flock on f, so that the size check, the write
// and a truncation back are one step for every server appending to the
// file. A file system without flock gets no lock: within one server l.mu
// already serialises appends.
func lockFile(f *os.File) (unlock func()) {
	fd := int(f.Fd())
	if err := flock(fd, syscall.LOCK_EX); err != nil {
		return func() {}
	}
	return func() { _ = flock(fd, syscall.LOCK_UN) }
}

// flock retries when a signal interrupts the wait.
func flock(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// open returns name's cached handle, or opens one (fresh). l.mu must be
// held.
func (l *Logger) open(name, path string) (h *logFile, fresh bool, err error) {
	if h, ok := l.files[name]; ok {
		return h, false, nil
	}
	if len(l.files) > 64 {
		l.closeAll()
	}
	// Read as well as append: write checks the last byte for a torn line.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		// The directory could not be created at start-up, or was removed.
		if err = os.MkdirAll(l.dir, 0o700); err == nil {
			f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
		}
	}
	if err != nil {
		return nil, false, err
	}
	h = &logFile{f: f, end: -1}
	l.files[name] = h
	return h, true, nil
}
