package app

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/transfer"
)

// buildTransfers makes the tickets of transfer "url". Over HTTP, the MCP
// listener serves them once it is bound (wireTransfers). Over stdio, a
// loopback listener of their own serves them, opened when the first URL is
// asked for (transferListener.open): a stdio client is on this machine, and the
// bytes then move at disk speed instead of as base64 inside JSON.
func (a *App) buildTransfers(r config.Remote) *transfer.Tickets {
	if r.HTTPAddr == "" && r.TransferListen == config.TransferOff {
		return nil
	}
	a.transfers = transfer.New(r.TransferURLTTL)
	if r.HTTPAddr == "" {
		l := &transferListener{addr: r.TransferListen, handler: func() http.Handler { return a.Server.FilesHandler() }}
		a.transfers.SetOpener(l.open)
		a.closers = append(a.closers, l.close)
	}
	return a.transfers
}

// transferListener serves transfer URLs on a loopback address of its own
// (stdio). Safe for concurrent use.
type transferListener struct {
	addr    string
	handler func() http.Handler // the server's files handler, built after the tickets
	mu      sync.Mutex
	srv     *http.Server // nil until opened
	closed  bool
}

// open listens on l.addr and serves the files handler there; it returns the
// base URL tickets are built on.
func (l *transferListener) open() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return "", errors.New("the transfer listener is closed")
	}
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.Handle(transfer.PathPrefix, l.handler())
	l.srv = &http.Server{Handler: transfer.LocalOnly(mux), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn)}
	go func() { _ = l.srv.Serve(ln) }()
	slog.Info("transfer URLs served", "addr", ln.Addr().String())
	return "http://" + ln.Addr().String(), nil
}

// close stops the listener, if it was opened, and any transfer in flight;
// a later open fails.
func (l *transferListener) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.srv != nil {
		_ = l.srv.Close()
	}
}
