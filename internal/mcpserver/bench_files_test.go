package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"io"
	mrand "math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/app"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/stdiowire"
)

// BenchmarkStdioFileBytes moves a 10 MiB binary file into a session's
// workspace (upload_file, content_base64) and back (download_file, one
// range) through the server's stdio wire (stdiowire, as `codexec serve`
// uses it) and the go-sdk client, in one process, and reports the bytes
// allocated per MiB moved (both directions: 20 MiB an op), client and
// server together: the client's share is its own JSON encoding and
// decoding of the same messages.
//
//	go test ./internal/mcpserver -run '^$' -bench StdioFileBytes -benchtime 10x
func BenchmarkStdioFileBytes(b *testing.B) {
	cs := fileBenchClient(b, 16<<20)
	ctx := context.Background()
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", name, err, res)
		}
		return res
	}
	sid := call("start_session", map[string]any{"language": "python"}).StructuredContent.(map[string]any)["session_id"]
	data := make([]byte, 10<<20)
	_, _ = rand.Read(data)
	up := map[string]any{"session_id": sid, "path": "big.bin", "content_base64": base64.StdEncoding.EncodeToString(data), "overwrite": true}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		call("upload_file", up)
		var got []byte
		for len(got) < len(data) { // ranges as long as one message carries (next_offset)
			res := call("download_file", map[string]any{"session_id": sid, "path": "big.bin", "offset": len(got), "length": len(data) - len(got)})
			got = append(got, res.Content[0].(*mcp.EmbeddedResource).Resource.Blob...)
		}
		if !bytes.Equal(got, data) {
			b.Fatal("downloaded bytes differ")
		}
	}
	runtime.ReadMemStats(&after)
	moved := float64(b.N) * 2 * float64(len(data)>>20)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/moved, "alloc-B/MiB")
	b.ReportMetric(moved/b.Elapsed().Seconds()*(1<<20)/1e6, "MB/s")
}

// stdioClient connects a go-sdk client to a's server through stdiowire over
// pipes, as a client process would over the server's stdin and stdout.
func stdioClient(b *testing.B, a *app.App) *mcp.ClientSession {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	wire := stdiowire.New(sr, sw, stdiowire.Options{MaxLineBytes: 32 << 20})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = a.Server.Run(ctx, wire.Transport()) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: cr, Writer: cw, MaxLineLength: -1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close(); cancel(); _ = cw.Close(); _ = sw.Close() })
	return cs
}

// BenchmarkStdioFileChunks sends a file into a session's workspace in 1 MiB
// chunks (upload_file with offset) and reads it back in 1 MiB ranges,
// through the server's stdio wire and the go-sdk client in one process,
// for two file sizes. It reports the bytes allocated per MiB moved and the
// peak of live heap above what was live before (client and server
// together): a peak that does not grow with the file shows that neither
// end holds a whole-file copy.
//
//	go test ./internal/mcpserver -run '^$' -bench StdioFileChunks -benchtime 5x
func BenchmarkStdioFileChunks(b *testing.B) {
	for _, size := range []int{8 << 20, 32 << 20} {
		b.Run(strconv.Itoa(size>>20)+"MiB", func(b *testing.B) { benchChunks(b, size, 1<<20) })
	}
}

// benchChunks moves a file of size bytes (a multiple of chunk) each way.
func benchChunks(b *testing.B, size, chunk int) {
	cs := fileBenchClient(b, 64<<20)
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", name, err, res)
		}
		return res
	}
	sid := call("start_session", map[string]any{"language": "python"}).StructuredContent.(map[string]any)["session_id"]
	// The test holds no whole file either: chunks come from a seeded
	// stream and both directions are compared by hash.
	buf := make([]byte, chunk)
	runtime.GC()
	peak := watchHeap()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		src, sent, got := mrand.NewChaCha8([32]byte{1}), sha256.New(), sha256.New()
		for off := 0; off < size; off += chunk {
			_, _ = src.Read(buf)
			sent.Write(buf)
			call("upload_file", map[string]any{"session_id": sid, "path": "big.bin", "offset": off, "overwrite": true,
				"content_base64": base64.StdEncoding.EncodeToString(buf)})
		}
		for off := 0; off < size; {
			res := call("download_file", map[string]any{"session_id": sid, "path": "big.bin", "offset": off, "length": chunk})
			blob := res.Content[0].(*mcp.EmbeddedResource).Resource.Blob
			got.Write(blob)
			off += len(blob)
		}
		if !bytes.Equal(got.Sum(nil), sent.Sum(nil)) {
			b.Fatal("downloaded bytes differ")
		}
	}
	runtime.ReadMemStats(&after)
	moved := float64(b.N) * 2 * float64(size>>20)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/moved, "alloc-B/MiB")
	b.ReportMetric(moved/b.Elapsed().Seconds()*(1<<20)/1e6, "MB/s")
	b.ReportMetric(peak()/(1<<20), "peak-heap-MiB")
}

// watchHeap samples the live heap every millisecond from now on; the
// function it returns stops sampling and gives the highest sample above
// the first.
func watchHeap() func() float64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() float64 { metrics.Read(s); return float64(s[0].Value.Uint64()) }
	base, top := read(), 0.0
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for t := time.NewTicker(time.Millisecond); ; {
			select {
			case <-done:
				t.Stop()
				return
			case <-t.C:
				top = max(top, read()-base)
			}
		}
	}()
	return func() float64 { close(done); <-stopped; return top }
}

// fileBenchClient is a client over stdio of a subprocess-mode server built
// in-process, whose upload and download limits are limit bytes; the server
// closes with the benchmark.
func fileBenchClient(b *testing.B, limit int64) *mcp.ClientSession {
	dir := b.TempDir()
	cfg := config.Defaults(dir)
	cfg.SandboxMode = config.ModeSubprocess
	cfg.MaxUploadBytes, cfg.MaxDownloadBytes = limit, limit
	a, err := app.Build(context.Background(), cfg, app.HostEnv{Home: dir, Path: os.Getenv("PATH"), Cwd: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(a.Close)
	return stdioClient(b, a)
}
