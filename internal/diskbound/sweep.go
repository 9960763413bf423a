package diskbound

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	dev, point string
}

func mountInfo() []mountEntry {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []mountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 {
			out = append(out, mountEntry{dev: fields[2], point: unescapeMount(fields[4])})
		}
	}
	return out
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space, …).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// sweep removes the disks of codexec servers that are gone: entries of dir
// named "<pid>-<n>" (mount point) and "<pid>-<n>.img" whose pid no longer
// runs. Every mount of such a disk — its private mount and the workspace
// bind, wherever it is — is detached first. It returns how many disks it
// removed.
func sweep(dir string) int {
	stale := map[string]bool{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".img")
		if isStale(name) {
			stale[name] = true
		}
	}
	if len(stale) == 0 {
		return 0
	}
	mounts := mountInfo()
	devs := map[string]bool{}
	for _, m := range mounts {
		if filepath.Dir(m.point) == dir && stale[filepath.Base(m.point)] {
			devs[m.dev] = true
		}
	}
	// Innermost first, so a workspace bind below another disk goes before it.
	for i := len(mounts) - 1; i >= 0; i-- {
		if devs[mounts[i].dev] {
			detach(mounts[i].point)
		}
	}
	for name := range stale {
		_ = os.Remove(filepath.Join(dir, name))
		_ = os.Remove(filepath.Join(dir, name+".img"))
	}
	return len(stale)
}

// isStale reports whether name is "<pid>-<n>" (or "template-<pid>") of a
// process that no longer exists.
func isStale(name string) bool {
	name = strings.TrimPrefix(name, "template-")
	pidText, _, _ := strings.Cut(name, "-")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return unix.Kill(pid, 0) == unix.ESRCH
}
