package e2e

import (
	"bytes"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkFileTransfer10MBVsCp measures upload_file + download_file of a
// 10 MB binary file into and out of a session's workspace through the real
// binary over stdio (base64 in JSON both ways), next to `cp` of the same
// file on the host in the same loop, and reports the medians, their ratio
// and the MCP round trip's throughput.
//
//	go test ./internal/e2e/ -run '^$' -bench FileTransfer10MBVsCp -benchtime 10x
func BenchmarkFileTransfer10MBVsCp(b *testing.B) {
	s := start(b, "CODEXEC_MAX_UPLOAD_BYTES=16m", "CODEXEC_MAX_DOWNLOAD_BYTES=16m")
	sess := s.startSession("python")
	data := randomBytes(b, 10<<20)
	enc := base64.StdEncoding.EncodeToString(data)
	dir := b.TempDir()
	src := filepath.Join(dir, "src.bin")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"session_id": sess.SessionID, "path": "big.bin", "content_base64": enc, "overwrite": true}
	var mcpTimes, cpTimes []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if out, err := exec.Command("cp", src, filepath.Join(dir, "dst.bin")).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v %s", err, out)
		}
		t1 := time.Now()
		if _, res := s.upload(args); res.IsError {
			b.Fatal(text(res))
		}
		got := s.download(map[string]any{"session_id": sess.SessionID, "path": "big.bin", "length": len(data)}) // one message, past the default range
		t2 := time.Now()
		if !bytes.Equal(got, data) {
			b.Fatal("downloaded bytes differ")
		}
		cpTimes = append(cpTimes, t1.Sub(t0))
		mcpTimes = append(mcpTimes, t2.Sub(t1))
	}
	mcpMed, cpMed := median(mcpTimes), median(cpTimes)
	b.ReportMetric(float64(mcpMed.Microseconds())/1000, "mcp-ms/op")
	b.ReportMetric(float64(cpMed.Microseconds())/1000, "cp-ms/op")
	b.ReportMetric(float64(mcpMed)/float64(cpMed), "ratio")
	b.ReportMetric(2*10/mcpMed.Seconds(), "mcp-MB/s")
}
