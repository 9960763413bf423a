package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// write2GB tries to write 2 GiB into the workspace and reports how much got
// written before the first error (then fails with it).
const write2GB = `import os
n = 0
b = b'x' * (1 << 20)
try:
    with open('big', 'wb') as f:
        for _ in range(2048):
            f.write(b)
            n += len(b)
        os.fsync(f.fileno())
except OSError as e:
    print('written', n)
    raise
print('written', n)
`

// inodeFlood creates empty files in the workspace until the first error.
const inodeFlood = `import os
n = 0
os.mkdir('flood')
try:
    while n < 1000000:
        open('flood/%d' % n, 'w').close()
        n += 1
except OSError as e:
    print('files', n)
    raise
print('files', n)
`

// checkDiskFull asserts the run stopped with ENOSPC below max (of what
// stdout reports after key), the result names the disk limit, and the host
// holds nothing of it once the call has returned.
func checkDiskFull(t *testing.T, h *hostileFixture, r execResult, key string, max int64) {
	t.Helper()
	notSuccess(t, r)
	if !strings.Contains(r.Stderr, "No space left on device") {
		t.Fatalf("want ENOSPC inside the sandbox: %+v", r)
	}
	if r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "disk limit 32 MiB exceeded") {
		t.Fatalf("disk limit not reported plainly: %+v", r)
	}
	if n := reported(t, r.Stdout, key); n <= 0 || n > max {
		t.Fatalf("%s %d, want between 1 and %d", key, n, max)
	}
	// The workspace and its disk are reset just after the result is sent
	// (engine: off the caller's path), so the check allows that moment.
	b := hostBytes(t, h.disks)
	for deadline := time.Now().Add(5 * time.Second); b > 2<<20 && time.Now().Before(deadline); b = hostBytes(t, h.disks) {
		time.Sleep(20 * time.Millisecond)
	}
	if b > 2<<20 {
		t.Fatalf("the server's disks hold %d bytes on the host 5 s after the run", b)
	}
}

// checkFileSizeLimit asserts subprocess mode's RLIMIT_FSIZE stopped one
// file at max bytes (Python ignores SIGXFSZ and gets EFBIG).
func checkFileSizeLimit(t *testing.T, r execResult, max int64) {
	t.Helper()
	notSuccess(t, r)
	if !strings.Contains(r.Stderr, "File too large") {
		t.Fatalf("want EFBIG from the file size limit: %+v", r)
	}
	if n := reported(t, r.Stdout, "written"); n <= 0 || n > max {
		t.Fatalf("written %d, want between 1 and %d", n, max)
	}
}

func reported(t *testing.T, stdout, key string) int64 {
	t.Helper()
	_, rest, ok := strings.Cut(stdout, key+" ")
	if !ok {
		t.Fatalf("no %q in stdout %q", key, stdout)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// hostBytes is what the image files below dir occupy on the host file
// system (allocated blocks, not apparent size).
func hostBytes(t *testing.T, dir string) int64 {
	t.Helper()
	imgs, err := filepath.Glob(filepath.Join(dir, "*.img"))
	if err != nil || len(imgs) == 0 {
		t.Fatalf("no bounded disk images in %s (%v): is the disk limit only on /tmp?", dir, err)
	}
	var total int64
	for _, p := range imgs {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err == nil {
			total += st.Blocks * 512
		}
	}
	return total
}

// TestHostileDiskSession fills a session's workspace with a 2 GiB write and
// checks, while the session still holds the data, that the host holds no
// more than the limit; the session keeps working, and closing it gives the
// bytes back.
func TestHostileDiskSession(t *testing.T) {
	pinsNamespaceMode(t, "pins its sandbox modes")
	for _, m := range sandboxModes(t) {
		if m.name == "subprocess" {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			if why := modeAvailable(t, m.name, m.env...); why != "" {
				t.Skipf("%s mode unavailable on this host:\n%s", m.name, why)
			}
			skipWithout(t, byBoundedDisk, "a session's disk limit on its workspace")
			env := append(append([]string{"CODEXEC_SANDBOX_MODE=" + m.name}, hostileEnv...), m.env...)
			s := start(t, env...)
			disks := filepath.Join(s.DataDir, "sandbox", ".disks")
			sess := s.startSession("python")
			r, _ := s.send(sess.SessionID, write2GB, nil)
			if r.Status == "success" || r.ErrorMessage == nil || !strings.Contains(r.Stderr+*r.ErrorMessage, "No space left") ||
				!strings.Contains(*r.ErrorMessage, "disk limit 32 MiB exceeded") {
				t.Fatalf("2 GiB write in a session: %+v", r)
			}
			if n := reported(t, r.Stdout, "written"); n <= 0 || n > 32<<20 {
				t.Fatalf("written %d, limit 32 MiB", n)
			}
			if b := hostBytes(t, disks); b > 32<<20+2<<20 {
				t.Fatalf("the host holds %d bytes for a 32 MiB limit", b)
			}
			if r, _ := s.send(sess.SessionID, "import os\nos.remove('big')\nprint('ok')", nil); r.Stdout != "ok\n" {
				t.Fatalf("session after the fill: %+v", r)
			}
			if r, _ := s.send(sess.SessionID, "open('/tmp/t','wb').write(b'x'*(8<<20))\nprint('ok')", nil); r.Stdout != "ok\n" {
				t.Fatalf("session cannot write again after freeing space: %+v", r)
			}
			if res := s.call("close_session", map[string]any{"session_id": sess.SessionID}); res.IsError {
				t.Fatalf("close_session: %s", text(res))
			}
			if b := hostBytes(t, disks); b > 2<<20 {
				t.Fatalf("the host still holds %d bytes after close_session", b)
			}
			if _, err := os.Stat(disks); err != nil {
				t.Fatal(err)
			}
		})
	}
}
