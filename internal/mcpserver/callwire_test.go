package mcpserver

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCallWireWaitsOnEvents: a shutdown's waits end when the event comes
// (a call read reaching the drain, its answer written), not after a fixed
// time, and stay bounded when it never comes.
func TestCallWireWaitsOnEvents(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(7))
	call := &jsonrpc.Request{ID: id, Method: "tools/call"}
	for _, tc := range []struct {
		name  string
		wait  func(w *callWire)
		event func(w *callWire, c mcp.Connection)
	}{
		{"read call reaches the drain", func(w *callWire) { w.waitReached(time.Minute) },
			func(w *callWire, _ mcp.Connection) { w.reachedDrain() }},
		{"read call answered", func(w *callWire) { w.waitAnswered(time.Minute) },
			func(_ *callWire, c mcp.Connection) { _ = c.Write(context.Background(), &jsonrpc.Response{ID: id}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newCallWire()
			var c mcp.Connection = wiredConn{nopConn{}, w}
			w.noteRead(call)
			w.noteRead(&jsonrpc.Request{Method: "notifications/initialized"}) // not a call
			done := make(chan struct{})
			go func() { tc.wait(w); close(done) }()
			select {
			case <-done:
				t.Fatal("wait returned before the event")
			case <-time.After(20 * time.Millisecond):
			}
			tc.event(w, c)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("wait did not end after the event")
			}
		})
	}
	w := newCallWire()
	w.noteRead(call)
	start := time.Now()
	w.waitAnswered(30 * time.Millisecond)
	if time.Since(start) > 5*time.Second {
		t.Fatal("an answer that never comes held the wait past its bound")
	}
}

// nopConn is a connection whose writes succeed and go nowhere.
type nopConn struct{}

func (nopConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (nopConn) Write(context.Context, jsonrpc.Message) error { return nil }
func (nopConn) Close() error                                 { return nil }
func (nopConn) SessionID() string                            { return "" }
