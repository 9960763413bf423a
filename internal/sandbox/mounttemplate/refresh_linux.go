//go:build linux

package mounttemplate

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Template is a template namespace kept current. The host files it shows
// are bound once, by inode: a file replaced on the host (ldconfig renames a
// new /etc/ld.so.cache into place, editors and package managers replace
// /etc files) would stay old in it. So at most once a second Join compares
// Config.Files' identities with those bound and, when one changed, builds a
// new namespace; launchers that joined the old one keep it.
type Template struct {
	c Config

	mu      sync.Mutex
	ns      *os.File
	stamp   string
	checked time.Time
}

// refreshEvery is how often Config.Files are compared.
const refreshEvery = time.Second

// Open builds a template namespace as c says.
func Open(c Config) (*Template, error) {
	t := &Template{c: c}
	t.stamp = fileStamp(c.Files)
	ns, err := newTemplate(c)
	if err != nil {
		return nil, err
	}
	t.ns, t.checked = ns, time.Now()
	return t, nil
}

// Join returns a new descriptor of the current template namespace (the
// caller closes it), rebuilding it first if one of Config.Files changed.
func (t *Template) Join() (*os.File, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if time.Since(t.checked) >= refreshEvery {
		t.checked = time.Now()
		if s := fileStamp(t.c.Files); s != t.stamp {
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
func (t *Template) rebuild(stamp string) {
	ns, err := newTemplate(t.c)
	if err != nil {
		slog.Warn("sandbox template namespace not rebuilt after a host file changed", "err", err)
		return
	}
	_ = t.ns.Close()
	t.ns, t.stamp = ns, stamp
}

// Close closes the owner's descriptor: the namespace is freed once no
// launcher holds it either.
func (t *Template) Close() {
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
