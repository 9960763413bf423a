package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rawStdio is `codexec serve` spoken to with raw JSON-RPC lines on its
// stdin and stdout, for input no SDK client would send.
type rawStdio struct {
	t      *testing.T
	in     io.WriteCloser
	lines  chan []byte // stdout lines; closed when stdout ends
	stderr *syncBuffer
	nextID int
	exited chan struct{} // closed when the server has exited and its output is read
}

// wireMsg is an output line: a response, or a notification (ignored).
type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	// raw is the output line as sent.
	raw []byte
}

func startRawStdio(t *testing.T, env ...string) *rawStdio {
	t.Helper()
	cmd := exec.Command(binary(t), "serve")
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8",
		"CODEXEC_DATA_DIR=" + t.TempDir(), "CODEXEC_SANDBOX_MODE=subprocess",
	}, env...)
	r := &rawStdio{t: t, lines: make(chan []byte, 64), stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = r.stderr
	var err error
	if r.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.exited)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			r.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(r.lines)
		_, _ = io.Copy(io.Discard, out) // past an over-long line, to the end
		_ = cmd.Wait()                  // only once the output is read, as os/exec asks
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		go func() {
			for range r.lines { // lines no test read, so the reader reaches the end
			}
		}()
		select {
		case <-r.exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("server log:\n%s", tail(r.stderr.String(), 6000))
		}
	})
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.await(`"init"`)
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawStdio) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("write to the server: %v (it exited?)", err)
	}
}

// await returns the responses read up to and including the one with id
// (JSON text), failing if the server's output ends first.
func (r *rawStdio) await(id string) (before []wireMsg, last wireMsg) {
	r.t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("the server's output ended while waiting for the response to %s", id)
			}
			var m wireMsg
			if err := json.Unmarshal(line, &m); err != nil {
				r.t.Fatalf("output line %.300q is not JSON: %v", line, err)
			}
			m.raw = line
			if m.ID == nil {
				continue // a notification
			}
			if string(m.ID) == id {
				return before, m
			}
			before = append(before, m)
		case <-timeout:
			r.t.Fatalf("no response to %s within 2 minutes", id)
		}
	}
}

// answer returns the one answer to the line just sent. A line with an id
// is awaited by that id: the server may answer requests out of order (a
// tools/call runs concurrently with what follows it). A line answered with
// a null id is followed by a ping with id probe, and must be the one
// answer before the probe's.
func (r *rawStdio) answer(id, probe string) wireMsg {
	r.t.Helper()
	if id != "null" {
		before, a := r.await(id)
		if len(before) != 0 {
			r.t.Fatalf("answers before the one to the line: %+v", before)
		}
		return a
	}
	r.send(`{"jsonrpc":"2.0","id":` + probe + `,"method":"ping"}`)
	got, _ := r.await(probe)
	if len(got) != 1 {
		r.t.Fatalf("got %d answers to the line, want exactly 1: %+v", len(got), got)
	}
	return got[0]
}

// call sends a tools/call and returns its result's text and isError.
func (r *rawStdio) call(name string, args map[string]any) (text string, isError bool, structured map[string]any) {
	r.t.Helper()
	r.nextID++
	id := fmt.Sprintf(`"call-%d"`, r.nextID)
	params, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":%s}`, id, params))
	_, m := r.await(id)
	if m.Error != nil {
		r.t.Fatalf("%s: JSON-RPC error %d %s", name, m.Error.Code, m.Error.Message)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError    bool           `json:"isError"`
		Structured map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		r.t.Fatalf("%s: result %s: %v", name, m.Result, err)
	}
	for _, c := range res.Content {
		text += c.Text
	}
	return text, res.IsError, res.Structured
}

// TestStdioMalformedInputIsAnswered sends the server every kind of bad
// line and checks each is answered with the JSON-RPC error the
// specification names, and that the server, and an interpreter session it
// started before, go on serving.
func TestStdioMalformedInputIsAnswered(t *testing.T) {
	sameInEveryMode(t, "raw stdio pins subprocess mode")
	// The line cap is the larger of the HTTP body cap and what an upload of
	// CODEXEC_MAX_UPLOAD_BYTES needs in base64 (plus 1 MiB): about 1 MiB here.
	r := startRawStdio(t, "CODEXEC_MAX_UPLOAD_BYTES=1k", "CODEXEC_HTTP_MAX_BODY=64k")
	_, isErr, st := r.call("start_session", map[string]any{"language": "python"})
	sid, _ := st["session_id"].(string)
	if isErr || sid == "" {
		t.Fatalf("start_session: %v", st)
	}
	if text, isErr, _ := r.call("send_to_session", map[string]any{"session_id": sid, "code": "x = 41"}); isErr {
		t.Fatalf("send_to_session: %s", text)
	}
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	cases := []struct {
		name, line string
		code       int    // 0: a normal answer
		id         string // the answer's id as JSON text
	}{
		{"truncated JSON", `{"jsonrpc":"2.0","id":1,"method":"pi`, -32700, "null"},
		{"not JSON", `hello`, -32700, "null"},
		{"empty object", `{}`, -32600, "null"},
		{"empty batch", `[]`, -32600, "null"},
		{"batch", `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, -32600, "null"},
		{"method not a string", `{"jsonrpc":"2.0","method":5,"id":3}`, -32600, "3"},
		{"id null", `{"jsonrpc":"2.0","method":"ping","id":null}`, -32600, "null"},
		{"nesting past JSON's limit", deep, -32700, "null"},
		{"nesting past the SDK's limit", `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"a":` + strings.Repeat("[", 1500) + strings.Repeat("]", 1500) + `}}`, -32600, "4"},
		{"trailing garbage", `{"jsonrpc":"2.0","id":5,"method":"ping"} xx`, -32700, "null"},
		{"over-long line", `{"jsonrpc":"2.0","id":6,"method":"ping","params":{"p":"` + strings.Repeat("x", 2<<20) + `"}}`, -32600, "null"},
		{"id beyond int64", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, -32600, "123456789012345678901234567890"},
		{"fractional id", `{"jsonrpc":"2.0","id":7.5,"method":"ping"}`, -32600, "7.5"},
		{"bad response", `{"jsonrpc":"2.0","id":8,"error":"x"}`, -32600, "8"},
		{"largest exact id", `{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`, 0, "9007199254740992"},
		{"trailing blanks", `{"jsonrpc":"2.0","id":9,"method":"ping"}  ` + "\r", 0, "9"},
		{"params not an object", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":5}`, -32602, "10"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r.t = t
			r.send(tc.line)
			a := r.answer(tc.id, fmt.Sprintf(`"probe-%d"`, i))
			if string(a.ID) != tc.id {
				t.Errorf("answer id %s, want %s", a.ID, tc.id)
			}
			switch {
			case tc.code == 0 && a.Error != nil:
				t.Errorf("got error %d %q, want a result", a.Error.Code, a.Error.Message)
			case tc.code != 0 && (a.Error == nil || a.Error.Code != tc.code):
				t.Errorf("got %+v, want error code %d", a, tc.code)
			}
			text, isErr, _ := r.call("execute_code", map[string]any{"language": "bash", "code": "echo hi"})
			if isErr || !strings.Contains(text, "hi") {
				t.Errorf("execute_code after the line: %s", text)
			}
			text, isErr, _ = r.call("send_to_session", map[string]any{"session_id": sid, "code": "print(x + 1)"})
			if isErr || !strings.Contains(text, "42") {
				t.Errorf("the session started before the line: %s", text)
			}
		})
	}
}
