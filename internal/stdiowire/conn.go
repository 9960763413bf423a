package stdiowire

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport is the SDK transport over s: a connection that hands the SDK
// each checked line decoded once (by the check that passed it) and writes its
// messages one per line. The SDK's own stdio connection would scan and
// copy each line again with a json.Decoder, then try it as a batch (a scan,
// a copy and a failed decode) before decoding it: on an upload's megabytes
// that was a third of the server's CPU, and a Stream refuses batches and
// undecodable lines already.
func (s *Stream) Transport() mcp.Transport { return transport{s} }

type transport struct{ s *Stream }

// Connect starts the connection's reader.
func (t transport) Connect(context.Context) (mcp.Connection, error) {
	c := &conn{s: t.s, incoming: make(chan message), closed: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

// conn is a Stream as an mcp.Connection. Messages are read on a goroutine
// of their own, so that Close unblocks a Read even where closing the input
// does not end a read waiting on it (a terminal's stdin).
type conn struct {
	s         *Stream
	incoming  chan message
	closed    chan struct{}
	closeOnce sync.Once
}

// message is a message read, or the error that ended reading.
type message struct {
	msg jsonrpc.Message
	err error
}

// readLoop decodes the Stream's lines until the input ends or the
// connection is closed. A line the check passed decodes; should one not,
// the error ends the connection, as the SDK's own would.
func (c *conn) readLoop() {
	for {
		var d message
		d.msg, d.err = c.s.nextMessage()
		if d.err == nil && c.s.delivered != nil {
			c.s.delivered(d.msg)
		}
		select {
		case c.incoming <- d:
		case <-c.closed:
			return
		}
		if d.err != nil {
			return
		}
	}
}

// Read returns the next message; io.EOF once the connection is closed.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case d := <-c.incoming:
		return d.msg, d.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write sends msg as one line.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := encode(msg)
	if err != nil {
		return err
	}
	_, err = c.s.Write(data)
	return err
}

// encode is msg as one line, newline included. A successful response is
// put together around its result, which the SDK has encoded already
// (compact, no newline): jsonrpc.EncodeMessage would scan and copy the
// result again to compact it, which on a download's megabytes of base64
// costs as much as encoding it did. Other messages go through
// jsonrpc.EncodeMessage.
func encode(msg jsonrpc.Message) ([]byte, error) {
	if r, ok := msg.(*jsonrpc.Response); ok && r.Error == nil && len(r.Result) > 0 && r.ID.IsValid() {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // as the SDK writes ids
		if err := enc.Encode(r.ID.Raw()); err != nil {
			return nil, err
		}
		id := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		data := make([]byte, 0, len(r.Result)+len(id)+len(`{"jsonrpc":"2.0","id":,"result":}`)+1)
		data = append(append(append(data, `{"jsonrpc":"2.0","id":`...), id...), `,"result":`...)
		return append(append(data, r.Result...), "}\n"...), nil
	}
	data, err := jsonrpc.EncodeMessage(msg)
	return append(data, '\n'), err
}

// Close ends the connection and closes the Stream's input.
func (c *conn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.s.Close()
}

// SessionID is empty: a stdio connection has no session id.
func (c *conn) SessionID() string { return "" }

// nextLine returns the next checked line without its newline (valid until
// the next call), answering and dropping the others; at the end of the
// input it calls Options.InputEnded (once) and returns the input's error.
// It is Read for a reader of whole lines; a Stream is read one way only.
func (s *Stream) nextLine() ([]byte, error) {
	for len(s.pending) == 0 {
		if s.err != nil {
			if ended := s.ended; ended != nil {
				s.ended = nil
				ended()
			}
			return nil, s.err
		}
		s.next()
	}
	line := bytes.TrimSuffix(s.pending, []byte("\n"))
	s.pending = nil
	return line, nil
}

// nextMessage is the message of the next checked line, decoded once: by
// the check that passed it (check).
func (s *Stream) nextMessage() (jsonrpc.Message, error) {
	if _, err := s.nextLine(); err != nil {
		return nil, err
	}
	d := s.decoded
	s.decoded = decoded{}
	return d.message(), nil
}
