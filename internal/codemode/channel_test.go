package codemode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/codemode"
	"github.com/codexec/codexec/internal/runtime"
)

// sumCaller answers "calc.add" with a+b; it stands in for an upstream.
type sumCaller struct{ onCall func() }

func (s sumCaller) Call(ctx context.Context, server, tool string, args json.RawMessage) (json.RawMessage, error) {
	if s.onCall != nil {
		s.onCall()
	}
	var a struct{ A, B int }
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, err
	}
	if tool == "fail" {
		return nil, fmt.Errorf("upstream says no")
	}
	return json.Marshal(a.A + a.B)
}

func (sumCaller) Allowed(server, tool string) error { return nil }

func TestChannelWithNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	tools := []codemode.Tool{{Server: "calc", Name: "add"}, {Server: "calc", Name: "fail"}}
	dir := t.TempDir()
	code := `
    process.stdout.write("plain output\n");
    const sums = await Promise.all(Array.from({ length: 10 }, (_, i) => calc.add({ A: i, B: 1 })));
    let err = "";
    try { await calc.fail({}); } catch (e: any) { err = e.name + ": " + e.message; }
    let budget = "";
    try { await calc.add({ A: 1, B: 1 }); } catch (e: any) { budget = e.message; }
    return { sums, err, budget, other: await calc.nope().catch((e: any) => e.message) };`
	src, err := codemode.Wrap(code, nil, codemode.WrapOptions{Tools: tools, Mark: "\x1eMARK:"})
	if err != nil {
		t.Fatal(err)
	}
	js, _, err := runtime.CompileTS(src)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "-e", js)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var mu sync.Mutex
	var ch *codemode.Channel
	pinged := make(chan string, 1)
	var once sync.Once
	caller := sumCaller{onCall: func() {
		once.Do(func() { // the first call asks the program something while it waits
			r, err := ch.Request(context.Background(), "ping", nil)
			pinged <- fmt.Sprint(string(r), err)
		})
	}}
	bridge := codemode.NewBridge(caller, tools, codemode.BridgeOptions{MaxCalls: 11})
	done := make(chan json.RawMessage, 1)
	handle := func(ctx context.Context, op string, p json.RawMessage) (json.RawMessage, error) {
		if op == "done" {
			done <- p
			return nil, nil
		}
		return bridge.Handle(ctx, op, p)
	}
	ch = codemode.NewChannel(context.Background(), "\x1eMARK:", stdin, lockedWriter{&mu, &out}, handle)
	cmd.Stdout = ch
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	ch.Close()
	data := <-done
	env, err := codemode.Decode(data)
	if err != nil || !env.OK {
		t.Fatalf("%v %s", err, data)
	}
	want := `{"budget":"call budget of 11 tool calls per execution exhausted (CODEXEC_CODEMODE_MAX_CALLS)","err":"ToolError: upstream says no","other":"tool calc.nope is not available to this execution (injected: calc.add, calc.fail); name it in tools or describe it in intent","sums":[1,2,3,4,5,6,7,8,9,10]}`
	var got any
	_ = json.Unmarshal(env.Result, &got)
	gotJSON, _ := json.Marshal(got)
	if string(gotJSON) != want {
		t.Errorf("result\n%s\nwant\n%s", gotJSON, want)
	}
	select {
	case p := <-pinged:
		if !strings.Contains(p, `"pong":true`) {
			t.Errorf("host→program request: %s", p)
		}
	case <-time.After(time.Second):
		t.Error("no answer to the host's request")
	}
	if mu.Lock(); out.String() != "plain output\n" {
		t.Errorf("user output %q", out.String())
	}
	mu.Unlock()
	if n := len(bridge.Calls()); n != 13 {
		t.Errorf("%d calls recorded, want 13", n)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestChannelSplitFrames feeds output one byte at a time: a mark split
// across writes is still recognised and output around it is kept.
func TestChannelSplitFrames(t *testing.T) {
	var out strings.Builder
	got := make(chan string, 1)
	ch := codemode.NewChannel(context.Background(), "\x1eMK:", discard{}, &out, func(_ context.Context, op string, p json.RawMessage) (json.RawMessage, error) {
		got <- op + string(p)
		return nil, nil
	})
	for _, b := range []byte("a\x1eMK\x1eMK:{\"id\":1,\"op\":\"call\",\"params\":{\"x\":1}}\nb") {
		_, _ = ch.Write([]byte{b})
	}
	if g := <-got; g != `call{"x":1}` {
		t.Errorf("frame %q", g)
	}
	ch.Close()
	if out.String() != "a\x1eMKb" {
		t.Errorf("output %q", out.String())
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
