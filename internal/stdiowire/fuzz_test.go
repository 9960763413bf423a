package stdiowire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"

	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fuzzMax is the line cap of the fuzzed Stream, small so that the fuzzer
// reaches over-long lines.
const fuzzMax = 512

// FuzzStream feeds arbitrary input to a Stream and checks, line by line,
// that each yields exactly one thing: nothing (blank), the line passed on
// (which the SDK decodes, its id unchanged), or one well-formed -32700 or
// -32600 error. Then it feeds the same input to a real SDK server through a
// Stream and checks that the server still answers a ping after it.
func FuzzStream(f *testing.F) {
	for _, tc := range checkCases {
		f.Add([]byte(tc.line + "\n"))
	}
	f.Add([]byte("{}\n[]\nhello\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\r\n"))
	f.Add([]byte(strings.Repeat("x", 3*fuzzMax) + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLines(t, data)
		if len(data) <= 4*fuzzMax {
			checkServerSurvives(t, data)
		}
	})
}

// checkLines runs data through a Stream and compares what it passed on and
// answered with what each line, taken alone, must give.
func checkLines(t *testing.T, data []byte) {
	var out bytes.Buffer
	got := drain(t, New(bytes.NewReader(data), &out, Options{MaxLineBytes: fuzzMax}))
	var wantPassed strings.Builder
	var wantReplies []string
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		body := bytes.TrimSuffix(line, []byte("\n"))
		msg := bytes.TrimSpace(body)
		switch {
		case len(body) > fuzzMax:
			wantReplies = append(wantReplies, "too long")
		case len(msg) == 0:
		case Check(msg) != nil:
			wantReplies = append(wantReplies, string(Check(msg)))
		default:
			wantPassed.Write(msg)
			wantPassed.WriteByte('\n')
			checkPassed(t, msg)
		}
	}
	if got != wantPassed.String() {
		t.Fatalf("passed on %q, want %q", got, wantPassed.String())
	}
	gotReplies := strings.SplitAfter(out.String(), "\n")
	gotReplies = gotReplies[:len(gotReplies)-1] // after the last newline
	if len(gotReplies) != len(wantReplies) {
		t.Fatalf("%d replies for %d refused lines: %q", len(gotReplies), len(wantReplies), out.String())
	}
	for i, r := range gotReplies {
		a := parseReply(t, []byte(strings.TrimSuffix(r, "\n")))
		if a.Code != CodeParseError && a.Code != CodeInvalidRequest {
			t.Fatalf("reply %q has code %d", r, a.Code)
		}
		if wantReplies[i] != "too long" && strings.TrimSuffix(r, "\n") != wantReplies[i] {
			t.Fatalf("reply %q, want %q", r, wantReplies[i])
		}
	}
}

// checkPassed checks a line Check passed: the SDK decodes it, and writes
// the id of a request back as the same JSON value.
func checkPassed(t *testing.T, msg []byte) {
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		t.Fatalf("passed %q, which the SDK cannot decode: %v", msg, err)
	}
	sameMessage(t, msg, m)
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.ID.IsValid() {
		return
	}
	// The member named exactly "id", as the SDK reads it (a struct field
	// would also take "Id" or "iD").
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(msg, &fields); err != nil {
		t.Fatal(err)
	}
	in := struct{ ID json.RawMessage }{fields["id"]}
	reply, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Result: json.RawMessage("{}")})
	if err != nil {
		t.Fatal(err)
	}
	var back struct{ ID json.RawMessage }
	if err := json.Unmarshal(reply, &back); err != nil {
		t.Fatal(err)
	}
	if !sameJSON(in.ID, back.ID) {
		t.Fatalf("id %s comes back as %s", in.ID, back.ID)
	}
}

// sameMessage checks that what the check decoded line to (the message the
// connection hands the SDK) is what the SDK's own decoder makes of it.
func sameMessage(t *testing.T, line []byte, want jsonrpc.Message) {
	t.Helper()
	r, d := check(line)
	if r != nil {
		t.Fatalf("%q: refused", line)
	}
	got := d.message()
	switch w := want.(type) {
	case *jsonrpc.Request:
		g, ok := got.(*jsonrpc.Request)
		if !ok || g.ID != w.ID || g.Method != w.Method || !bytes.Equal(g.Params, w.Params) || (g.Params == nil) != (w.Params == nil) {
			t.Fatalf("%q: decoded as %#v, the SDK decodes %#v", line, got, want)
		}
	case *jsonrpc.Response:
		g, ok := got.(*jsonrpc.Response)
		if !ok || g.ID != w.ID || !bytes.Equal(g.Result, w.Result) || (g.Error == nil) != (w.Error == nil) {
			t.Fatalf("%q: decoded as %#v, the SDK decodes %#v", line, got, want)
		}
	default:
		t.Fatalf("%q: the SDK decodes a %T", line, want)
	}
}

// sameJSON compares an id as sent and as written back: equal strings, or
// the same number text (the SDK writes integers canonically).
func sameJSON(a, b json.RawMessage) bool {
	var sa, sb string
	if json.Unmarshal(a, &sa) == nil && json.Unmarshal(b, &sb) == nil {
		return sa == sb
	}
	return bytes.Equal(a, b)
}

// checkServerSurvives serves a real SDK server over a Stream, sends it
// data and then a ping, and fails unless the ping is answered.
func checkServerSurvives(t *testing.T, data []byte) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := New(inR, outW, Options{MaxLineBytes: fuzzMax})
	srv := mcp.NewServer(&mcp.Implementation{Name: "fuzz", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ss, err := srv.Connect(ctx, s.Transport(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	answered := make(chan bool, 1)
	go func() { answered <- awaitReply(outR, `"fuzz-final-ping"`) }()
	go func() {
		_, _ = inW.Write(append(bytes.Clone(data), '\n'))
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":"fuzz-final-ping","method":"ping"}`+"\n")
	}()
	select {
	case ok := <-answered:
		if !ok {
			t.Fatalf("the server ended before answering a ping after %q", data)
		}
	case <-ctx.Done():
		t.Fatalf("no answer to a ping after %q", data)
	}
	_ = inW.Close()
	_ = outW.Close()
}

// awaitReply reads output lines until one is the response with id (JSON
// text), reporting false if the output ends first.
func awaitReply(r io.Reader, id string) bool {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage
			Result json.RawMessage
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && string(m.ID) == id && m.Result != nil {
			go func() { _, _ = io.Copy(io.Discard, r) }()
			return true
		}
	}
	return false
}

// FuzzDecodeOnce: every line the check passes decodes, in the check, to
// the message the SDK's own decoder makes of it (the connection hands the
// SDK that message instead of decoding the line again).
func FuzzDecodeOnce(f *testing.F) {
	for _, tc := range checkCases {
		f.Add([]byte(tc.line))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","result":{"x":[1, 2]}}`))
	f.Add([]byte(`{ "jsonrpc" : "2.0" , "method" : "notifications/initialized" , "params" : null }`))
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || Check(line) != nil {
			return
		}
		m, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			t.Fatalf("passed %q, which the SDK cannot decode: %v", line, err)
		}
		sameMessage(t, line, m)
	})
}
