package filetools

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/files"
)

// tsClientMaxMessage is the largest message the official TypeScript SDK
// client reads by default (its stdio read buffer; past it the client drops
// the connection).
const tsClientMaxMessage = 10 << 20

// TestDownloadDefaultRangeFitsClients reads a file larger than every range
// from a real kept-artifact store with the default settings: a read with no
// length, encoded as the whole JSON-RPC response line, must stay under what
// the official clients accept (with room for the start of the next message
// in the client's buffer); so must explicit lengths up to
// CODEXEC_MAX_DOWNLOAD_BYTES, which are cut, and text that escaping inflates.
func TestDownloadDefaultRangeFitsClients(t *testing.T) {
	cfg := config.Defaults(t.TempDir())
	store, err := files.NewDirStore(t.TempDir(), files.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	// Random bytes: not text, so the range comes back as a base64 blob, the
	// largest encoding.
	big := make([]byte, cfg.MaxDownloadBytes+(1<<20))
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(big)
	ctx := context.Background()
	if _, _, err := store.Put(ctx, "exec-1", "big.bin", bytes.NewReader(big), files.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	fs := New(Deps{Config: cfg, Files: store})
	// Text that JSON escapes sixfold (HTML-safe encoders write < as \u003c).
	angles := bytes.Repeat([]byte("<"), int(cfg.MaxDownloadBytes))
	if _, _, err := store.Put(ctx, "exec-2", "angles.txt", bytes.NewReader(angles), files.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		item    string
		path    string
		length  int64
		wantLen int
	}{
		{"default range", "exec-1", "big.bin", 0, DefaultRangeBytes},
		{"explicit maximum is cut to one message", "exec-1", "big.bin", cfg.MaxDownloadBytes, blobBudget},
		{"explicit small", "exec-1", "big.bin", 1000, 1000},
		{"escaped text is cut to one message", "exec-2", "angles.txt", 0, MessageBudget / 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, out, err := fs.downloadFile(ctx, nil, DownloadIn{Path: tc.path, ExecutionID: tc.item, Length: tc.length})
			if err != nil {
				t.Fatal(err)
			}
			if out.Length != tc.wantLen || out.NextOffset == nil || *out.NextOffset != int64(tc.wantLen) {
				t.Fatalf("read %d bytes (next_offset %v), want %d", out.Length, out.NextOffset, tc.wantLen)
			}
			res.StructuredContent = out // as the SDK sends it
			line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": res})
			if err != nil {
				t.Fatal(err)
			}
			if len(line) >= tsClientMaxMessage-(64<<10) {
				t.Errorf("response of %d bytes, over the %d-byte message limit of the official TypeScript client", len(line), tsClientMaxMessage)
			}
			t.Logf("%d bytes read, response line %d bytes", out.Length, len(line))
		})
	}
}
