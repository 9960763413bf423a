package stdiowire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// drain reads s to its end and returns what it passed on.
func drain(t testing.TB, s *Stream) string {
	t.Helper()
	got, err := io.ReadAll(s)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(got)
}

// replies parses the replies written to out.
func replies(t testing.TB, out string) []answer {
	t.Helper()
	var got []answer
	for _, line := range strings.SplitAfter(out, "\n") {
		if line == "" {
			continue
		}
		if !strings.HasSuffix(line, "\n") {
			t.Fatalf("reply %q has no newline", line)
		}
		got = append(got, parseReply(t, []byte(strings.TrimSuffix(line, "\n"))))
	}
	return got
}

func TestStream(t *testing.T) {
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	long := `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"` + strings.Repeat("x", 200) + `"}}`
	cases := []struct {
		name        string
		in          string
		wantPassed  string
		wantReplies []answer
	}{
		{"one message", ping + "\n", ping + "\n", nil},
		{"CRLF and surrounding blanks are trimmed", "  " + ping + " \t\r\n", ping + "\n", nil},
		{"blank lines are ignored", "\n \r\n\t\n" + ping + "\n\n", ping + "\n", nil},
		{"last line without newline", ping, ping + "\n", nil},
		{"bad line between good ones", ping + "\nhello\n" + ping + "\n", ping + "\n" + ping + "\n", []answer{{CodeParseError, "null"}}},
		{"each bad line answered once", "{}\n[]\nx\n", "", []answer{{CodeInvalidRequest, "null"}, {CodeInvalidRequest, "null"}, {CodeParseError, "null"}}},
		{"over-long line skipped", long + "\n" + ping + "\n", ping + "\n", []answer{{CodeInvalidRequest, "null"}}},
		{"over-long last line", ping + "\n" + long, ping + "\n", []answer{{CodeInvalidRequest, "null"}}},
		{"line at the cap passes", strings.Repeat(" ", 128-len(ping)) + ping + "\n", ping + "\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			s := New(strings.NewReader(tc.in), &out, Options{MaxLineBytes: 128})
			if got := drain(t, s); got != tc.wantPassed {
				t.Errorf("passed on %q, want %q", got, tc.wantPassed)
			}
			if diff := cmp.Diff(tc.wantReplies, replies(t, out.String())); diff != "" {
				t.Errorf("replies (-want +got):\n%s", diff)
			}
		})
	}
}

// endless is a line that never ends: n bytes of 'x' and no newline.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	if e.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), e.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	e.n -= k
	return k, nil
}

// TestStreamSkipsLongLineInBoundedMemory checks that a line far over the
// cap is answered without being buffered.
func TestStreamSkipsLongLineInBoundedMemory(t *testing.T) {
	var out bytes.Buffer
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	in := io.MultiReader(&endless{n: 64 << 20}, strings.NewReader("\n"+ping+"\n"))
	s := New(in, &out, Options{MaxLineBytes: 1024})
	if got := drain(t, s); got != ping+"\n" {
		t.Errorf("passed on %q, want the ping", got)
	}
	if diff := cmp.Diff([]answer{{CodeInvalidRequest, "null"}}, replies(t, out.String())); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	if c := cap(s.line); c > 1024+readChunk {
		t.Errorf("the line buffer grew to %d bytes for a cap of 1024", c)
	}
}

// TestStreamWritesDoNotInterleave writes SDK messages from several
// goroutines while Read answers bad lines: every output line must be one
// whole message.
func TestStreamWritesDoNotInterleave(t *testing.T) {
	pr, pw := io.Pipe()
	outR, outW := io.Pipe()
	s := New(pr, outW, Options{})
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
	}()
	readDone := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, s); close(readDone) }()
	var wg sync.WaitGroup
	const writers, each = 4, 200
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":"w%d-%d","result":{"pad":%q}}`+"\n", w, i, strings.Repeat("y", 3000))
				if _, err := s.Write([]byte(msg)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	const bad = 200
	for range bad {
		if _, err := io.WriteString(pw, "not json "+strings.Repeat("z", 3000)+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	_ = pw.Close()
	wg.Wait()
	<-readDone
	_ = outW.Close()
	<-done
	if len(lines) != writers*each+bad {
		t.Fatalf("got %d output lines, want %d", len(lines), writers*each+bad)
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("interleaved output line: %.200q", l)
		}
	}
}

// TestStreamCallsInputEndedBeforeTheEnd checks that every line is read
// before InputEnded runs, that it runs once, and that Read reports the end
// only after it returned (the server answers running calls there).
func TestStreamCallsInputEndedBeforeTheEnd(t *testing.T) {
	var events []string
	s := New(strings.NewReader("{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"b\"}"),
		io.Discard, Options{InputEnded: func() { events = append(events, "ended") }})
	r := bufio.NewReader(s)
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			events = append(events, "line "+strings.TrimSpace(line))
		}
		if err != nil {
			events = append(events, "read: "+err.Error())
			break
		}
	}
	if _, err := s.Read(make([]byte, 8)); err != io.EOF {
		t.Errorf("second read at the end: %v, want EOF", err)
	}
	want := []string{`line {"jsonrpc":"2.0","method":"a"}`, `line {"jsonrpc":"2.0","method":"b"}`, "ended", "read: EOF"}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
