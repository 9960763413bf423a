//go:build linux

package namespace

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// template is the template namespace (template.go) of a backend. The host
// files it shows are bound once, by inode: a file replaced on the host
// (ldconfig renames a new /etc/ld.so.cache into place, editors and package
// managers replace /etc files) would stay old in it. So at most once a
// second a run compares the files' identities with those bound and, when
// one changed, builds a new template; runs already started keep the one
// they joined.
type template struct {
	o       Options
	scratch string
	// files are the host paths whose identity is watched.
	files []string

	mu      sync.Mutex
	ns      *os.File
	stamp   string
	checked time.Time
}

// refreshEvery is how often the watched files are compared.
const refreshEvery = time.Second

// openTemplate builds the backend's template namespace.
func openTemplate(o Options, scratch string) (*template, error) {
	t := &template{o: o, scratch: scratch, files: append(append([]string{}, etcFiles...), fontCache)}
	t.stamp = fileStamp(t.files)
	ns, err := newTemplate(o, scratch)
	if err != nil {
		return nil, err
	}
	t.ns, t.checked = ns, time.Now()
	return t, nil
}

// join returns a new descriptor of the current template namespace (the
// caller closes it), rebuilding it first if a watched file changed.
func (t *template) join() (*os.File, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if time.Since(t.checked) >= refreshEvery {
		t.checked = time.Now()
		if s := fileStamp(t.files); s != t.stamp {
			t.rebuild(s)
		}
	}
	fd, err := unix.FcntlInt(t.ns.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "template-ns"), nil
}

// rebuild replaces the namespace by a new one for the files as stamp
// says; on failure the old one stays (and the next check tries again).
func (t *template) rebuild(stamp string) {
	ns, err := newTemplate(t.o, t.scratch)
	if err != nil {
		slog.Warn("sandbox template namespace not rebuilt after a host file changed", "err", err)
		return
	}
	_ = t.ns.Close()
	t.ns, t.stamp = ns, stamp
}

func (t *template) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	_ = t.ns.Close()
}

// fileStamp is the identity (device, inode, change time) of each path, "-"
// for a missing one.
func fileStamp(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil {
			b.WriteString("-;")
			continue
		}
		for _, v := range []uint64{st.Dev, st.Ino, uint64(st.Ctim.Sec), uint64(st.Ctim.Nsec)} {
			b.WriteString(strconv.FormatUint(v, 16))
			b.WriteByte(':')
		}
		b.WriteByte(';')
	}
	return b.String()
}
