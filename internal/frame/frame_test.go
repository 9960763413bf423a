package frame

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testMark = "\x1e\x1fcodexec-abc:"

// run feeds stream to a Demux in chunks of size bytes, flushes it, and
// returns the output and the frames it saw.
func run(opts Options, stream string, size int) (string, []string) {
	var out strings.Builder
	var frames []string
	opts.OnFrame = func(line []byte) { frames = append(frames, string(line)) }
	d := NewDemux(opts, &out)
	for i := 0; i < len(stream); i += size {
		_, _ = d.Write([]byte(stream[i:min(i+size, len(stream))]))
	}
	d.Flush()
	return out.String(), frames
}

// TestDemuxAtAnyChunking feeds each stream in every chunk size: user output
// must reach the sink intact and frames must be found, even when the mark
// is split across writes.
func TestDemuxAtAnyChunking(t *testing.T) {
	cases := []struct {
		name       string
		mark       string
		stream     string
		wantOut    string
		wantFrames []string
	}{
		{
			name:       "session driver replies around output",
			mark:       testMark,
			stream:     "hello\nwor" + testMark + `{"id":1,"ok":true}` + "\nld: \x1e almost a mark\n" + testMark + `{"id":2,"end":true}` + "\ntail",
			wantOut:    "hello\nworld: \x1e almost a mark\ntail",
			wantFrames: []string{`{"id":1,"ok":true}`, `{"id":2,"end":true}`},
		},
		{
			name:       "code-mode call after a false start of the mark",
			mark:       "\x1eMK:",
			stream:     "a\x1eMK\x1eMK:{\"id\":1,\"op\":\"call\",\"params\":{\"x\":1}}\nb",
			wantOut:    "a\x1eMKb",
			wantFrames: []string{`{"id":1,"op":"call","params":{"x":1}}`},
		},
		{
			name:    "output only, ending in part of the mark",
			mark:    testMark,
			stream:  "no frames here\n\x1e\x1fcodexec",
			wantOut: "no frames here\n\x1e\x1fcodexec",
		},
		{
			name:       "frame cut off by the end of the stream is dropped",
			mark:       testMark,
			stream:     "x" + testMark + `{"id":1}` + "\n" + testMark + `{"id":2,`,
			wantOut:    "x",
			wantFrames: []string{`{"id":1}`},
		},
		{
			name:       "empty frame and adjacent frames",
			mark:       testMark,
			stream:     testMark + "\n" + testMark + "{}\n" + testMark + "[]\n",
			wantFrames: []string{"", "{}", "[]"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for size := 1; size <= len(c.stream); size++ {
				out, frames := run(Options{Mark: c.mark, MaxFrame: 1 << 20}, c.stream, size)
				if diff := cmp.Diff(c.wantOut, out); diff != "" {
					t.Fatalf("chunk %d: output (-want +got):\n%s", size, diff)
				}
				if diff := cmp.Diff(c.wantFrames, frames); diff != "" {
					t.Fatalf("chunk %d: frames (-want +got):\n%s", size, diff)
				}
			}
		})
	}
}

// TestDemuxOverflow: a frame over MaxFrame is dropped (Drop: later frames
// still count) or becomes output (PassThrough: nothing after is a frame).
func TestDemuxOverflow(t *testing.T) {
	big := testMark + strings.Repeat("x", 40)
	stream := "a" + big + "\nb" + testMark + `{"id":3}` + "\n"
	cases := []struct {
		overflow   Overflow
		wantOut    string
		wantFrames []string
	}{
		// Byte by byte, the limit is passed with 17 of the frame's 40
		// bytes read: those are dropped, the other 23 are output.
		{Drop, "a" + strings.Repeat("x", 23) + "\nb", []string{`{"id":3}`}},
		{PassThrough, "a" + strings.Repeat("x", 40) + "\nb" + testMark + `{"id":3}` + "\n", nil},
	}
	for _, c := range cases {
		out, frames := run(Options{Mark: testMark, MaxFrame: 16, Overflow: c.overflow}, stream, 1)
		if diff := cmp.Diff(c.wantOut, out); diff != "" {
			t.Errorf("overflow %d: output (-want +got):\n%s", c.overflow, diff)
		}
		if diff := cmp.Diff(c.wantFrames, frames); diff != "" {
			t.Errorf("overflow %d: frames (-want +got):\n%s", c.overflow, diff)
		}
	}
}

func TestPartialMark(t *testing.T) {
	cases := []struct {
		b, mark string
		want    int
	}{
		{"abc", "xyz", 0}, {"abx", "xyz", 1}, {"axy", "xyz", 2}, {"xyzx", "xyz", 1}, {"", "xyz", 0}, {"xyz", "xyz", 0},
	}
	for _, c := range cases {
		if got := partialMark([]byte(c.b), []byte(c.mark)); got != c.want {
			t.Errorf("partialMark(%q, %q) = %d, want %d", c.b, c.mark, got, c.want)
		}
	}
}

// TestSetSink: output goes to the sink current when it is written.
func TestSetSink(t *testing.T) {
	var first, second strings.Builder
	d := NewDemux(Options{Mark: testMark, MaxFrame: 64}, &first)
	_, _ = d.Write([]byte("one\n"))
	d.SetSink(nil)
	_, _ = d.Write([]byte("lost\n"))
	d.SetSink(&second)
	_, _ = d.Write([]byte("two\n"))
	if first.String() != "one\n" || second.String() != "two\n" {
		t.Errorf("first %q, second %q", first.String(), second.String())
	}
}

// TestEncoderConcurrent: frames written at once arrive whole, one a line.
func TestEncoderConcurrent(t *testing.T) {
	var buf lockedBuffer
	e := NewEncoder(&buf)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = e.Encode(map[string]any{"id": i, "code": strings.Repeat("y", 100)})
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d lines, want 50", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, `{"code":"yyy`) || !strings.HasSuffix(l, "}") {
			t.Fatalf("torn frame %q", l)
		}
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// FuzzDemux: whatever the output (free of the mark) and the chunking, the
// output comes through whole and the frame is found.
func FuzzDemux(f *testing.F) {
	f.Add("hello\n", "after", `{"id":1}`, 3)
	f.Add("\x1e\x1fcodex", "\x1e", `{}`, 1)
	f.Fuzz(func(t *testing.T, before, after, body string, size int) {
		if size < 1 || size > 64 || strings.Contains(before+after, "\x1e\x1fcodexec") ||
			strings.ContainsAny(body, "\n") || strings.Contains(body, testMark) {
			t.Skip()
		}
		stream := before + testMark + body + "\n" + after
		out, frames := run(Options{Mark: testMark, MaxFrame: 1 << 20}, stream, size)
		if out != before+after {
			t.Fatalf("output %q, want %q", out, before+after)
		}
		if diff := cmp.Diff([]string{body}, frames); diff != "" {
			t.Fatalf("frames (-want +got):\n%s", diff)
		}
	})
}

// TestEncoderBytes: each frame is json.Marshal's bytes and a newline,
// across frames larger than the kept buffer and after them.
func TestEncoderBytes(t *testing.T) {
	var got, want bytes.Buffer
	e := NewEncoder(&got)
	for _, v := range []any{
		map[string]any{"id": 1, "op": "exec", "code": "x += 1"},
		map[string]any{"code": strings.Repeat("<é\n", keepBuf)},
		struct {
			ID   int    `json:"id"`
			Code string `json:"code"`
		}{2, "print('&')"},
		[]int{1, 2},
	} {
		if err := e.Encode(v); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		want.Write(append(b, '\n'))
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("frames differ from json.Marshal's: %d vs %d bytes", got.Len(), want.Len())
	}
	if c := e.buf.Cap(); c > keepBuf {
		t.Errorf("the encoder kept a %d-byte buffer, more than %d", c, keepBuf)
	}
}
