package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// uploadOut mirrors upload_file's structured output.
type uploadOut struct {
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	UploadID string `json:"upload_id"`
}

func (s *server) upload(args map[string]any) (uploadOut, *mcp.CallToolResult) {
	s.t.Helper()
	var out uploadOut
	res := s.call("upload_file", args)
	if !res.IsError {
		decodeStructured(s.t, res, &out)
	}
	return out, res
}

// download returns the bytes of a download_file result (text, image or
// blob content) or fails the test on a tool error.
func (s *server) download(args map[string]any) []byte {
	s.t.Helper()
	res := s.call("download_file", args)
	if res.IsError {
		s.t.Fatalf("download_file %v: %s", args, text(res))
	}
	return contentBytes(s.t, res.Content)
}

func contentBytes(t testing.TB, cs []mcp.Content) []byte {
	t.Helper()
	if len(cs) != 1 {
		t.Fatalf("want one content item, got %d", len(cs))
	}
	switch c := cs[0].(type) {
	case *mcp.TextContent:
		return []byte(c.Text)
	case *mcp.ImageContent:
		return c.Data
	case *mcp.EmbeddedResource:
		return c.Resource.Blob
	}
	t.Fatalf("unexpected content %T", cs[0])
	return nil
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// randomBytes returns n bytes covering every byte value (NULs, invalid UTF-8).
func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 256 && i < n; i++ {
		b[i] = byte(i)
	}
	return b
}

// roundTripCode reads in/data.bin, prints its sha256 and writes the bytes
// reversed to out/result.bin.
const roundTripCode = `import hashlib, os
data = open('in/data.bin', 'rb').read()
print(hashlib.sha256(data).hexdigest())
os.makedirs('out', exist_ok=True)
n = open('out/result.bin', 'wb').write(data[::-1])`

func reversed(b []byte) []byte {
	r := make([]byte, len(b))
	for i, c := range b {
		r[len(b)-1-i] = c
	}
	return r
}

// TestFilesRoundTripAllModes: upload binary bytes → code reads them → code
// writes a result → download returns identical bytes, for a one-shot run
// (staged upload, artifact by execution_id and resources/read) and for a
// session, in every sandbox mode the host supports.
func TestFilesRoundTripAllModes(t *testing.T) {
	pinsNamespaceMode(t, "pins its sandbox modes")
	for _, m := range sandboxModes(t) {
		t.Run(m.name, func(t *testing.T) {
			if why := modeAvailable(t, m.name, m.env...); why != "" {
				t.Skipf("%s mode unavailable on this host:\n%s", m.name, why)
			}
			env := append([]string{"CODEXEC_SANDBOX_MODE=" + m.name, "CODEXEC_SANDBOX_DIR=" + aclFreeDir(t)}, m.env...)
			s := start(t, env...)
			data := randomBytes(t, 200_000)
			t.Run("one-shot", func(t *testing.T) { oneShotRoundTrip(t, s, data) })
			t.Run("session", func(t *testing.T) { sessionRoundTrip(t, s, data) })
		})
	}
}

// aclFreeDir returns a fresh directory without inherited POSIX ACLs. Earlier
// versions gave the sandbox user a default ACL on any working_dir (a host's
// /tmp could carry one, see `codexec doctor`); a workspace under such a
// parent inherits an ACL whose mask denies writing. These tests are about
// files, so they use a clean sandbox dir whatever the host's history.
func aclFreeDir(t *testing.T) string {
	dir := t.TempDir()
	for _, name := range []string{"system.posix_acl_default", "system.posix_acl_access"} {
		_ = unix.Removexattr(dir, name)
	}
	return filepath.Join(dir, "sandbox")
}

func oneShotRoundTrip(t *testing.T, s *server, data []byte) {
	up, res := s.upload(map[string]any{"path": "in/data.bin", "content_base64": base64.StdEncoding.EncodeToString(data)})
	if res.IsError || up.UploadID == "" || up.SHA256 != sum(data) || up.Size != int64(len(data)) {
		t.Fatalf("staged upload: %+v %s", up, text(res))
	}
	r, res := s.exec(map[string]any{"language": "python", "code": roundTripCode, "files": []string{up.UploadID}})
	if r.Status != "success" || strings.TrimSpace(r.Stdout) != sum(data) {
		t.Fatalf("run: %+v %s", r, text(res))
	}
	if strings.Join(r.Artifacts, ",") != "out/result.bin" {
		t.Fatalf("artifacts = %v (the placed upload must not count)", r.Artifacts)
	}
	uri := "codexec://executions/" + r.ExecutionID + "/files/out/result.bin"
	if !hasLink(res, uri) {
		t.Fatalf("no resource_link %s in %+v", uri, res.Content)
	}
	got := s.download(map[string]any{"execution_id": r.ExecutionID, "path": "out/result.bin"})
	if sum(got) != sum(reversed(data)) {
		t.Fatalf("downloaded artifact differs: %d bytes", len(got))
	}
	rr, err := s.Session.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(rr.Contents) != 1 || sum(rr.Contents[0].Blob) != sum(reversed(data)) {
		t.Fatalf("resources/read: %v", err)
	}
	part := s.download(map[string]any{"execution_id": r.ExecutionID, "path": "out/result.bin", "offset": 1000, "length": 5000})
	if !bytes.Equal(part, reversed(data)[1000:6000]) {
		t.Fatal("range read differs")
	}
	// An image the code writes comes back as image content (stdlib only, so
	// it works in the minimal docker test image too).
	_, res = s.exec(map[string]any{"language": "python", "code": pngCode})
	checkImage(t, res, 3, 2)
}

// pngCode writes a 3×2 red PNG with the standard library only.
const pngCode = `import struct, zlib
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
raw = b''.join(b'\x00' + b'\xff\x00\x00' * 3 for _ in range(2))
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 3, 2, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
n = open('dot.png', 'wb').write(png)`

func sessionRoundTrip(t *testing.T, s *server, data []byte) {
	sess := s.startSession("python")
	up, res := s.upload(map[string]any{"session_id": sess.SessionID, "path": "in/data.bin",
		"content_base64": base64.StdEncoding.EncodeToString(data)})
	if res.IsError || up.UploadID != "" || up.SHA256 != sum(data) {
		t.Fatalf("session upload: %+v %s", up, text(res))
	}
	r, isErr := s.send(sess.SessionID, roundTripCode, nil)
	if isErr || strings.TrimSpace(r.Stdout) != sum(data) {
		t.Fatalf("send: %+v", r)
	}
	got := s.download(map[string]any{"context_id": sess.SessionID, "path": "out/result.bin"})
	if sum(got) != sum(reversed(data)) {
		t.Fatalf("downloaded session file differs: %d bytes", len(got))
	}
	var l struct {
		Entries []struct {
			Path string `json:"path"`
			Size int64  `json:"size"`
			Type string `json:"type"`
		} `json:"entries"`
	}
	decodeStructured(t, s.call("list_files", map[string]any{"session_id": sess.SessionID, "recursive": true}), &l)
	found := false
	for _, e := range l.Entries {
		found = found || (e.Path == "out/result.bin" && e.Size == int64(len(data)) && e.Type == "file")
	}
	if !found {
		t.Fatalf("list_files: %+v", l)
	}
	// mode is honoured: an uploaded script runs as a program.
	if _, res := s.upload(map[string]any{"session_id": sess.SessionID, "path": "bin/hello.sh", "mode": "755",
		"content": "#!/bin/sh\necho hello from upload\n"}); res.IsError {
		t.Fatalf("script upload: %s", text(res))
	}
	if r, _ := s.send(sess.SessionID, "import subprocess\nprint(subprocess.run(['./bin/hello.sh'], capture_output=True, text=True).stdout, end='')", nil); r.Stdout != "hello from upload\n" {
		t.Fatalf("uploaded script: %+v", r)
	}
}

func hasLink(res *mcp.CallToolResult, uri string) bool {
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok && l.URI == uri {
			return true
		}
	}
	return false
}

// TestFilesAttacksRefused: sandboxed code plants symlinks (to /etc/passwd,
// to another session's workspace, to a directory outside) and a FIFO; every
// download, upload and resources/read through them is refused and nothing
// outside the workspace is read or written.
func TestFilesAttacksRefused(t *testing.T) {
	s := start(t)
	victim := s.startSession("python")
	r, _ := s.send(victim.SessionID, "open('private.txt','w').write('victim-secret-5521')\nimport os\nprint(os.getcwd())", nil)
	victimDir := strings.TrimSpace(r.Stdout)
	attacker := s.startSession("python")
	plant := `import os
os.symlink('/etc/passwd', 'passwd.txt')
os.symlink(` + pyQuote(victimDir) + `, 'victim')
os.symlink(` + pyQuote(victimDir+"/private.txt") + `, 'victim.txt')
os.symlink('/etc', 'etcdir')
os.mkfifo('pipe')
try:
    os.link(` + pyQuote(victimDir+"/private.txt") + `, 'hardlink')  # only possible without isolation
except OSError:
    pass
print('planted')`
	if r, isErr := s.send(attacker.SessionID, plant, nil); isErr || r.Stdout != "planted\n" {
		t.Fatalf("plant: %+v", r)
	}
	for _, p := range []string{"passwd.txt", "victim/private.txt", "victim.txt", "etcdir/passwd", "pipe", "hardlink",
		"../" + filepath.Base(victimDir) + "/private.txt", "/etc/passwd", "victim/../passwd.txt"} {
		res := s.call("download_file", map[string]any{"session_id": attacker.SessionID, "path": p})
		if !res.IsError || strings.Contains(text(res), "root:") || strings.Contains(text(res), "victim-secret") {
			t.Errorf("download %q not refused: %s", p, text(res))
		}
		uri := "codexec://sessions/" + attacker.SessionID + "/files/" + p
		if rr, err := s.Session.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("resources/read %s served %d contents", uri, len(rr.Contents))
		}
	}
	for _, p := range []string{"etcdir/codexec-planted", "victim/planted.txt", "../planted.txt"} {
		_, res := s.upload(map[string]any{"session_id": attacker.SessionID, "path": p, "content": "x"})
		if !res.IsError {
			t.Errorf("upload %q not refused", p)
		}
	}
	if _, err := os.Stat("/etc/codexec-planted"); err == nil {
		t.Fatal("an upload escaped into /etc")
	}
	if _, err := os.Stat(filepath.Join(victimDir, "planted.txt")); err == nil {
		t.Fatal("an upload escaped into another session's workspace")
	}
	// One-shot: a symlink and a FIFO as "artifacts" are not kept.
	r, _ = s.exec(map[string]any{"language": "bash", "code": "ln -s /etc/passwd leak.txt; mkfifo fifo; echo ok > fine.txt"})
	got := s.download(map[string]any{"execution_id": r.ExecutionID, "path": "fine.txt"})
	if string(got) != "ok\n" {
		t.Fatalf("fine.txt = %q", got)
	}
	for _, p := range []string{"leak.txt", "fifo"} {
		res := s.call("download_file", map[string]any{"execution_id": r.ExecutionID, "path": p})
		if !res.IsError || strings.Contains(text(res), "root:") {
			t.Errorf("one-shot %s served: %s", p, text(res))
		}
	}
}

func pyQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// TestArtifactExpiry: a kept artifact disappears after CODEXEC_ARTIFACT_TTL.
func TestArtifactExpiry(t *testing.T) {
	s := start(t, "CODEXEC_ARTIFACT_TTL=2s")
	r, _ := s.exec(map[string]any{"language": "bash", "code": "echo kept > a.txt"})
	if got := s.download(map[string]any{"execution_id": r.ExecutionID, "path": "a.txt"}); string(got) != "kept\n" {
		t.Fatalf("before expiry: %q", got)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := s.call("download_file", map[string]any{"execution_id": r.ExecutionID, "path": "a.txt"})
		if res.IsError && strings.Contains(text(res), "expired") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("artifact still served long after its TTL: %s", text(res))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestUploadLimits: CODEXEC_MAX_UPLOAD_BYTES and the workspace disk limit.
func TestUploadLimits(t *testing.T) {
	s := start(t, "CODEXEC_MAX_UPLOAD_BYTES=1k", "CODEXEC_DISK_LIMIT=2k")
	if _, res := s.upload(map[string]any{"path": "big", "content": strings.Repeat("x", 1025)}); !res.IsError || !strings.Contains(text(res), "CODEXEC_MAX_UPLOAD_BYTES") {
		t.Fatalf("over the upload limit: %s", text(res))
	}
	sess := s.startSession("python")
	for i, want := range []bool{false, false, true} {
		_, res := s.upload(map[string]any{"session_id": sess.SessionID, "path": "f" + string(rune('a'+i)), "content": strings.Repeat("x", 900)})
		if res.IsError != want || (want && !strings.Contains(text(res), "CODEXEC_DISK_LIMIT")) {
			t.Fatalf("upload %d: isError=%v %s", i, res.IsError, text(res))
		}
	}
}

// TestPlotsAsImages: matplotlib's show() in a one-shot run and a figure left
// open in a session come back as image/png of the figure's size; a PNG the
// code writes comes back too. Runs in the default mode and in docker mode
// (a test image holding the host's Debian matplotlib).
func TestPlotsAsImages(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import matplotlib").Run(); err != nil {
		t.Skip("python3-matplotlib is not installed (scripts/deps.sh installs it)")
	}
	t.Run("default", func(t *testing.T) { checkPlots(t, start(t)) })
	t.Run("docker", func(t *testing.T) {
		sameInEveryMode(t, "pins docker mode")
		env := mplDockerEnv(t)
		if why := modeAvailable(t, "docker", env...); why != "" {
			t.Skipf("docker mode unavailable on this host:\n%s", why)
		}
		checkPlots(t, start(t, append(env, "CODEXEC_SANDBOX_DIR="+aclFreeDir(t))...))
	})
}

// mplDockerEnv builds (once per host) the docker test image with matplotlib
// and returns the environment selecting it.
func mplDockerEnv(t *testing.T) []string {
	env, why := dockerTestEnv(t, "matplotlib")
	if why != "" {
		t.Skip(why)
	}
	return append([]string{"CODEXEC_SANDBOX_MODE=docker"}, env...)
}

func checkPlots(t *testing.T, s *server) {
	plot := "import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3), dpi=50)\nplt.plot([1, 3, 2])\n"
	r, res := s.exec(map[string]any{"language": "python", "code": plot + "plt.show()\nprint('done')"})
	if r.Status != "success" {
		t.Fatalf("plot run: %+v", r)
	}
	checkImage(t, res, 200, 150)
	t.Logf("one-shot plot run: %d ms", r.DurationMs)
	sess := s.startSession("python")
	if r, isErr := s.send(sess.SessionID, "import matplotlib.pyplot as plt\nx = 1", nil); isErr || r.Status != "success" {
		t.Fatalf("import: %+v", r)
	}
	var sr execResult
	res = s.callInto("send_to_session", map[string]any{"session_id": sess.SessionID,
		"code": "plt.figure(figsize=(3, 2), dpi=100)\nplt.bar(['a', 'b'], [1, 2])\nplt.savefig('chart.png')\n"}, &sr)
	if sr.Status != "success" {
		t.Fatalf("session plot: %+v", sr)
	}
	// Both the file the code saved and the figure left open come back.
	if n := checkImage(t, res, 300, 200); n != 2 {
		t.Fatalf("want 2 images (chart.png and the open figure), got %d", n)
	}
}

// checkImage asserts every image content of res is a w×h PNG and returns
// how many there are (at least one).
func checkImage(t *testing.T, res *mcp.CallToolResult, w, h int) int {
	t.Helper()
	n := 0
	for _, c := range res.Content {
		img, ok := c.(*mcp.ImageContent)
		if !ok {
			continue
		}
		n++
		if img.MIMEType != "image/png" {
			t.Fatalf("mime %s", img.MIMEType)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(img.Data))
		if err != nil || cfg.Width != w || cfg.Height != h {
			t.Fatalf("image %dx%d (%v), want %dx%d", cfg.Width, cfg.Height, err, w, h)
		}
	}
	if n == 0 {
		t.Fatalf("no image content in %s", text(res))
	}
	return n
}

// TestDataFrameTable: a DataFrame as a session's last expression prints as a
// table, not wrapped columns.
func TestDataFrameTable(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import pandas").Run(); err != nil {
		t.Skip("python3-pandas is not installed (scripts/deps.sh installs it)")
	}
	s := start(t)
	sess := s.startSession("python")
	code := "import pandas as pd\npd.DataFrame({c * 12: [1, 2] for c in 'abcdefgh'})"
	r, isErr := s.send(sess.SessionID, code, nil)
	if isErr || r.Status != "success" {
		t.Fatalf("send: %+v", r)
	}
	lines := strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "aaaaaaaaaaaa") || !strings.Contains(lines[0], "hhhhhhhhhhhh") {
		t.Fatalf("not one header row and two data rows:\n%s", r.Stdout)
	}
}

// TestResourcesListed: resources/list shows kept artifacts, the templates
// describe both URI forms, and a session file reads through its URI.
func TestResourcesListed(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	r, _ := s.exec(map[string]any{"language": "bash", "code": "echo hi > 'report 1.txt'"})
	uri := "codexec://executions/" + r.ExecutionID + "/files/report%201.txt"
	lr, err := s.Session.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, res := range lr.Resources {
		found = found || res.URI == uri
	}
	if !found {
		t.Fatalf("%s not in resources/list (%d resources)", uri, len(lr.Resources))
	}
	rr, err := s.Session.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || rr.Contents[0].Text != "hi\n" {
		t.Fatalf("read %s: %v", uri, err)
	}
	lt, err := s.Session.ListResourceTemplates(ctx, nil)
	if err != nil || len(lt.ResourceTemplates) != 2 {
		t.Fatalf("templates: %v %v", lt, err)
	}
	sess := s.startSession("python")
	s.send(sess.SessionID, "n = open('notes.md', 'w').write('# hi')", nil)
	rr, err = s.Session.ReadResource(ctx, &mcp.ReadResourceParams{URI: "codexec://sessions/" + sess.SessionID + "/files/notes.md"})
	if err != nil || rr.Contents[0].Text != "# hi" {
		t.Fatalf("session resource: %v", err)
	}
}

// TestLargeImageDownscaled: an image over CODEXEC_MAX_IMAGE_BYTES comes back
// downscaled under the cap, keeping its aspect ratio; its full-size bytes
// stay downloadable.
func TestLargeImageDownscaled(t *testing.T) {
	s := start(t, "CODEXEC_MAX_IMAGE_BYTES=30k")
	code := `import os, struct, zlib
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
w, h = 400, 200
raw = b''.join(b'\x00' + os.urandom(3 * w) for _ in range(h))
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
n = open('noise.png', 'wb').write(png)`
	r, res := s.exec(map[string]any{"language": "python", "code": code})
	if r.Status != "success" {
		t.Fatalf("run: %+v", r)
	}
	var img *mcp.ImageContent
	for _, c := range res.Content {
		if ic, ok := c.(*mcp.ImageContent); ok {
			img = ic
		}
	}
	if img == nil || len(img.Data) > 30<<10 {
		t.Fatalf("no image under the cap in %s", text(res))
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(img.Data))
	if err != nil || cfg.Width >= 400 || cfg.Width < 2*cfg.Height-2 || cfg.Width > 2*cfg.Height+2 {
		t.Fatalf("downscaled image %dx%d (%v)", cfg.Width, cfg.Height, err)
	}
	full := s.download(map[string]any{"execution_id": r.ExecutionID, "path": "noise.png"})
	if c, err := png.DecodeConfig(bytes.NewReader(full)); err != nil || c.Width != 400 {
		t.Fatalf("full-size download: %v %v", c, err)
	}
}
