package e2e

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPrintResultSize: python's print(1) is answered in one JSON-RPC line
// of at most 505 bytes, which still carries every field the execute_code
// contract always returns (truncated, timed_out and error_message too,
// false and null: the documented outputs show them in every example),
// which limits held for the run (about 85 bytes), and why it ended and
// what it cost (end_reason and usage: 63 bytes for a warm subprocess run,
// which measures no CPU or memory; about 130 where they are measured); the
// text is the output itself.
func TestPrintResultSize(t *testing.T) {
	sameInEveryMode(t, "raw stdio pins subprocess mode")
	r := startRawStdio(t)
	r.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"print(1)"}}}`)
	line := r.rawResponse("3")
	if len(line) > 505 {
		t.Errorf("print(1) result is %d bytes, over 505: %s", len(line), line)
	}
	var msg struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			Structured map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	var keys []string
	for k := range msg.Result.Structured {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"artifacts", "duration_ms", "end_reason", "error_message", "execution_id", "execution_time", "exit_code", "language",
		"limits", "status", "stderr", "stdout", "success", "timed_out", "truncated", "usage"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("structured fields (-want +got):\n%s\n%s", diff, line)
	}
	if len(msg.Result.Content) != 1 || msg.Result.Content[0].Text != "1\n" {
		t.Errorf("content %+v, want the text 1\\n", msg.Result.Content)
	}
	t.Logf("%d bytes: %s", len(line), line)
}

// rawResponse returns the output line answering id (JSON text), as sent.
func (r *rawStdio) rawResponse(id string) []byte {
	r.t.Helper()
	_, m := r.await(id)
	return m.raw
}
