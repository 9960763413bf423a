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
// the official clients accept, and explicit lengths up to
// CODEXEC_MAX_DOWNLOAD_BYTES must still be honoured.
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
	for _, tc := range []struct {
		name    string
		length  int64
		wantLen int
		mustFit bool // the caller's own length may ask for more
	}{
		{"default range", 0, DefaultRangeBytes, true},
		{"explicit maximum", cfg.MaxDownloadBytes, int(cfg.MaxDownloadBytes), false},
		{"explicit small", 1000, 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, out, err := fs.downloadFile(ctx, nil, DownloadIn{Path: "big.bin", ExecutionID: "exec-1", Length: tc.length})
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
			if tc.mustFit && len(line) >= tsClientMaxMessage {
				t.Errorf("response of %d bytes, over the %d-byte message limit of the official TypeScript client", len(line), tsClientMaxMessage)
			}
			t.Logf("%d bytes read, response line %d bytes", out.Length, len(line))
		})
	}
}
