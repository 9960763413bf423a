package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Principal names the principal of an HTTP request (its verified token's
// user), or says why it has none.
type Principal func(*http.Request) (context.Context, error)

// Handler wraps next, the SDK's Streamable HTTP handler, as Transport does
// a stdio connection: a POST of a tasks/* request is answered here (JSON),
// for the request's principal; a tools/call's `params.task` moves to
// _meta[MarkerKey]; the answers to initialize and tools/list get the
// capability and taskSupport. Bodies over maxBody bytes go to next as they
// are (which refuses them). A body that names none of these methods is
// searched once for their names, and passes on.
func (w *Wire) Handler(next http.Handler, maxBody int64, principal Principal) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(rw, r)
			return
		}
		body, err := readBody(r, maxBody)
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		if err != nil || int64(len(body)) > maxBody || !mentions(body) {
			next.ServeHTTP(rw, r)
			return
		}
		msg, err := jsonrpc.DecodeMessage(body)
		req, ok := msg.(*jsonrpc.Request)
		if err != nil || !ok {
			next.ServeHTTP(rw, r)
			return
		}
		w.serve(rw, r, next, req, principal)
	})
}

// readBody reads r's body, at most max+1 bytes, into a buffer of its
// announced length (a megabyte of arguments read in growing steps costs
// several times its copy).
func readBody(r *http.Request, max int64) ([]byte, error) {
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= max {
		buf.Grow(int(n) + 1)
	}
	_, err := buf.ReadFrom(io.LimitReader(r.Body, max+1))
	return buf.Bytes(), err
}

// names are the methods and parameter whose presence in a body sends it
// down the decoding path.
var names = [][]byte{[]byte(`"tasks/`), taskKey, []byte(`"initialize"`), []byte(`"tools/list"`)}

func mentions(body []byte) bool {
	for _, n := range names {
		if bytes.Contains(body, n) {
			return true
		}
	}
	return false
}

func (w *Wire) serve(rw http.ResponseWriter, r *http.Request, next http.Handler, req *jsonrpc.Request, principal Principal) {
	switch {
	case IsMethod(req.Method) && req.IsCall():
		w.answerHTTP(rw, r, req, principal)
	case req.Method == "tools/call":
		params, changed := callParams(req.Params)
		if changed {
			req.Params = params
			if b, err := jsonrpc.EncodeMessage(req); err == nil {
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
			}
		}
		next.ServeHTTP(rw, r)
	default:
		f := w.responseRewrite(req.Method, r.Header.Get("MCP-Protocol-Version"))
		if f == nil || !req.IsCall() {
			next.ServeHTTP(rw, r)
			return
		}
		c := &captured{header: http.Header{}, code: http.StatusOK}
		next.ServeHTTP(c, r)
		c.replay(rw, f)
	}
}

// answerHTTP answers a tasks/* request with one JSON response. It keeps
// the SDK handler's guard against DNS rebinding, which it answers in front
// of: on a loopback address, the Host must be a loopback name too, or a web
// page could read a local server's tasks through its own domain.
func (w *Wire) answerHTTP(rw http.ResponseWriter, r *http.Request, req *jsonrpc.Request, principal Principal) {
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && loopback(local.String()) && !loopback(r.Host) {
		http.Error(rw, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
		return
	}
	ctx, err := principal(r)
	var res *jsonrpc.Response
	if err != nil {
		res = &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}}
	} else {
		res = w.svc.Answer(ctx, req)
	}
	b, err := jsonrpc.EncodeMessage(res)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	_, _ = rw.Write(b)
}

// loopback reports whether hostport names the loopback interface
// (localhost or a loopback IP, with or without a port).
func loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// captured is a response held back to be rewritten (initialize and
// tools/list answer at once, in one JSON body or one short event stream).
type captured struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (c *captured) Header() http.Header         { return c.header }
func (c *captured) WriteHeader(code int)        { c.code = code }
func (c *captured) Write(p []byte) (int, error) { return c.body.Write(p) }
func (c *captured) Flush()                      {}

// replay writes c to rw with the JSON-RPC response in it rewritten by f,
// whether the body is one JSON message or an event stream of them.
func (c *captured) replay(rw http.ResponseWriter, f func(json.RawMessage) json.RawMessage) {
	body := c.body.Bytes()
	if c.code == http.StatusOK {
		if bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
			body = rewriteMessage(body, f)
		} else {
			body = rewriteEvents(body, f)
		}
	}
	for k, v := range c.header {
		rw.Header()[k] = v
	}
	rw.Header().Del("Content-Length")
	rw.WriteHeader(c.code)
	_, _ = rw.Write(body)
}

// rewriteEvents rewrites each `data:` line of an event stream holding a
// response.
func rewriteEvents(body []byte, f func(json.RawMessage) json.RawMessage) []byte {
	lines := bytes.Split(body, []byte("\n"))
	for i, l := range lines {
		if data, ok := bytes.CutPrefix(l, []byte("data: ")); ok {
			lines[i] = append([]byte("data: "), rewriteMessage(data, f)...)
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// rewriteMessage rewrites the result of data, a JSON-RPC success response.
func rewriteMessage(data []byte, f func(json.RawMessage) json.RawMessage) []byte {
	msg, err := jsonrpc.DecodeMessage(data)
	res, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok || res.Error != nil {
		return data
	}
	res.Result = f(res.Result)
	out, err := jsonrpc.EncodeMessage(res)
	if err != nil {
		return data
	}
	return out
}
