package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/s3store/s3test"
)

// s3Env is the environment of a server keeping its files in srv's bucket
// "codexec" below prefix "replicas/".
func s3Env(t *testing.T, srv *s3test.Server) []string {
	return []string{
		"CODEXEC_BLOB_STORE=s3://codexec/replicas?endpoint=" + srv.URL() + "&create=true",
		"CODEXEC_S3_ACCESS_KEY=" + srv.AccessKey, "CODEXEC_S3_SECRET_KEY=" + srv.SecretKey,
		"CODEXEC_SANDBOX_DIR=" + aclFreeDir(t),
	}
}

// TestS3BlobStore runs the files round trip on servers that keep staged
// uploads and artifacts in a real S3 server: an upload staged on one server
// reaches a run, the run's artifact lands in the bucket (not the data dir),
// and download_file (whole and ranged), resources/read and list_files
// return it — on that server and on a second one over the same bucket, as
// another replica would.
func TestS3BlobStore(t *testing.T) {
	sameInEveryMode(t, "a store test")
	srv := s3test.Start(t)
	s1 := start(t, s3Env(t, srv)...)
	data := randomBytes(t, 300_000)
	up, res := s1.upload(map[string]any{"path": "in/data.bin", "content_base64": base64.StdEncoding.EncodeToString(data)})
	if res.IsError || up.UploadID == "" || up.SHA256 != sum(data) {
		t.Fatalf("staged upload: %+v %s", up, text(res))
	}
	r, res := s1.exec(map[string]any{"language": "python", "code": roundTripCode, "files": []string{up.UploadID}})
	if r.Status != "success" || strings.TrimSpace(r.Stdout) != sum(data) || strings.Join(r.Artifacts, ",") != "out/result.bin" {
		t.Fatalf("run: %+v %s", r, text(res))
	}
	uri := "codexec://executions/" + r.ExecutionID + "/files/out/result.bin"
	if !hasLink(res, uri) {
		t.Fatalf("no resource_link %s in %+v", uri, res.Content)
	}
	for _, key := range []string{"items/" + up.UploadID + ".json", "data/" + up.UploadID + "/0", "items/" + r.ExecutionID + ".json", "data/" + r.ExecutionID + "/0"} {
		if _, err := os.Stat(filepath.Join(srv.Dir, "codexec", "replicas", key)); err != nil {
			t.Errorf("object %s is not in the bucket: %v", key, err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(s1.DataDir, "artifacts")); len(ents) != 0 {
		t.Errorf("the data dir keeps %d artifact items", len(ents))
	}
	s2 := start(t, s3Env(t, srv)...)
	for name, s := range map[string]*server{"the keeping server": s1, "another replica": s2} {
		t.Run(name, func(t *testing.T) { readArtifact(t, s, r.ExecutionID, uri, reversed(data)) })
	}
	// The upload staged on the first server is used by a run on the second.
	r2, res := s2.exec(map[string]any{"language": "python", "code": "import hashlib\nprint(hashlib.sha256(open('in/data.bin','rb').read()).hexdigest())", "files": []string{up.UploadID}})
	if r2.Status != "success" || strings.TrimSpace(r2.Stdout) != sum(data) {
		t.Fatalf("run on the other replica: %+v %s", r2, text(res))
	}
}

// readArtifact checks every way of reading a kept artifact on s.
func readArtifact(t *testing.T, s *server, execID, uri string, want []byte) {
	if got := s.download(map[string]any{"execution_id": execID, "path": "out/result.bin"}); !bytes.Equal(got, want) {
		t.Fatalf("download_file: %d bytes differ", len(got))
	}
	part := s.download(map[string]any{"execution_id": execID, "path": "out/result.bin", "offset": 1000, "length": 5000})
	if !bytes.Equal(part, want[1000:6000]) {
		t.Fatal("range read differs")
	}
	rr, err := s.Session.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(rr.Contents) != 1 || !bytes.Equal(rr.Contents[0].Blob, want) {
		t.Fatalf("resources/read: %v", err)
	}
	var l struct {
		Entries []struct {
			Path string `json:"path"`
			Size int64  `json:"size"`
		} `json:"entries"`
	}
	decodeStructured(t, s.call("list_files", map[string]any{}), &l)
	found := false
	for _, e := range l.Entries {
		found = found || (e.Path == execID+"/out/result.bin" && e.Size == int64(len(want)))
	}
	if !found {
		t.Fatalf("list_files does not list the artifact: %+v", l.Entries)
	}
}

// TestS3BlobStoreRefusedAtStart: a bucket that does not exist (without
// create=true) stops the server before it serves, with a message naming
// the setting, the endpoint and the bucket.
func TestS3BlobStoreRefusedAtStart(t *testing.T) {
	sameInEveryMode(t, "start-up refused")
	srv := s3test.Start(t)
	cmd := exec.Command(binary(t), "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CODEXEC_DATA_DIR=" + t.TempDir(),
		"CODEXEC_BLOB_STORE=s3://absent?endpoint=" + srv.URL(),
		"CODEXEC_S3_ACCESS_KEY=" + srv.AccessKey, "CODEXEC_S3_SECRET_KEY=" + srv.SecretKey}
	cmd.Stdin = strings.NewReader("")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the server did not stop: %s", out)
	}
	want := `CODEXEC_BLOB_STORE: blob store ` + srv.URL() + `/absent/: bucket "absent" does not exist`
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("exit %v, output:\n%s\nwant it to say %q", err, out, want)
	}
	if strings.Contains(string(out), srv.SecretKey) {
		t.Fatal("the error shows the secret key")
	}
}
