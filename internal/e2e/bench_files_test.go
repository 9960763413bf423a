package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkFileTransfer10MBVsCp moves a 10 MiB binary file into a session's
// workspace and back out (upload_file + download_file) through the real
// binary three ways, next to `cp` of the same file on the host, all in the
// same loop in a shuffled order so that load on the machine weighs on each
// alike:
//
//   - stdio: base64 in JSON both ways (download in ranges of one message)
//   - http-json: the same calls over Streamable HTTP
//   - http-url: transfer "url", the bytes PUT and GET raw on the listener
//
// It reports each subject's median, its throughput (20 MiB moved per op)
// and its ratio to the median of one cp of the file.
//
//	go test ./internal/e2e/ -run '^$' -bench FileTransfer10MBVsCp -benchtime 10x
func BenchmarkFileTransfer10MBVsCp(b *testing.B) {
	data := randomBytes(b, 10<<20)
	env := []string{"CODEXEC_MAX_UPLOAD_BYTES=16m", "CODEXEC_MAX_DOWNLOAD_BYTES=16m", "CODEXEC_HTTP_MAX_BODY=16m"}
	stdio := start(b, env...)
	stdioSess := stdio.startSession("python").SessionID
	hs := startHTTP(b, "", env...)
	cs := hs.mustConnect("")
	httpSess := tenantCallB(b, cs, "start_session", map[string]any{"language": "python"})["session_id"].(string)
	dir := b.TempDir()
	src := filepath.Join(dir, "src.bin")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		b.Fatal(err)
	}
	enc := base64.StdEncoding.EncodeToString(data)
	subjects := map[string]func(){
		"cp": func() {
			if out, err := exec.Command("cp", src, filepath.Join(dir, "dst.bin")).CombinedOutput(); err != nil {
				b.Fatalf("cp: %v %s", err, out)
			}
		},
		"stdio": func() {
			if _, res := stdio.upload(map[string]any{"session_id": stdioSess, "path": "big.bin", "content_base64": enc, "overwrite": true}); res.IsError {
				b.Fatal(text(res))
			}
			checkSame(b, downloadRanges(b, len(data), func(args map[string]any) *mcp.CallToolResult {
				args["session_id"] = stdioSess
				return stdio.call("download_file", args)
			}), data)
		},
		"http-json": func() {
			tenantCallB(b, cs, "upload_file", map[string]any{"session_id": httpSess, "path": "big.bin", "content_base64": enc, "overwrite": true})
			checkSame(b, downloadRanges(b, len(data), func(args map[string]any) *mcp.CallToolResult {
				args["session_id"] = httpSess
				return callTool(b, cs, "download_file", args)
			}), data)
		},
		"http-url": func() { roundTripURL(b, cs, httpSess, data) },
	}
	names := []string{"cp", "stdio", "http-json", "http-url"}
	times := map[string][]time.Duration{}
	for b.Loop() {
		rand.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		for _, n := range names {
			t0 := time.Now()
			subjects[n]()
			times[n] = append(times[n], time.Since(t0))
		}
	}
	cp := median(times["cp"])
	b.ReportMetric(float64(cp.Microseconds())/1000, "cp-ms/op")
	for _, n := range []string{"stdio", "http-json", "http-url"} {
		m := median(times[n])
		b.ReportMetric(float64(m.Microseconds())/1000, n+"-ms/op")
		b.ReportMetric(float64(2*len(data))/1e6/m.Seconds(), n+"-MB/s")
		b.ReportMetric(float64(m)/float64(cp), n+"-ratio-to-cp")
	}
}

// downloadRanges reads a file of size bytes with download_file in the
// ranges one message carries (each result's next_offset), through call.
func downloadRanges(b testing.TB, size int, call func(map[string]any) *mcp.CallToolResult) []byte {
	var got []byte
	for len(got) < size {
		res := call(map[string]any{"path": "big.bin", "offset": len(got), "length": size - len(got)})
		if res.IsError {
			b.Fatal(text(res))
		}
		got = append(got, contentBytes(b, res.Content)...)
	}
	return got
}

func checkSame(b testing.TB, got, want []byte) {
	if !bytes.Equal(got, want) {
		b.Fatalf("downloaded %d bytes differ from the %d uploaded", len(got), len(want))
	}
}

// tenantCallB calls a tool over cs, fails on any error, and returns the
// structured result.
func tenantCallB(b testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %s", tool, err, text(res))
	}
	var out map[string]any
	raw, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &out)
	return out
}
