package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/console"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/httpserve"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/pgstore"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/tenant"
)

// consoleParts are what Build made that the web console reads.
type consoleParts struct {
	history any // the logs tools' history; the console needs it as a logindex.Browser
	files   files.Store
	runs    *runs.Manager
}

// wireConsole serves the web console on the HTTP listener unless
// CODEXEC_CONSOLE=off, logging in with the verifier /mcp uses.
func (a *App) wireConsole(cfg config.Config, o *httpserve.Options) error {
	if !cfg.Console.Enabled() {
		return nil
	}
	b, ok := a.console.history.(logindex.Browser)
	if !ok {
		slog.Warn("web console off: the execution history store cannot be browsed", "store", fmt.Sprintf("%T", a.console.history))
		return nil
	}
	key, err := consoleKey(cfg.Console.KeyFile)
	if err != nil {
		return err
	}
	co := console.Options{History: b, Files: a.console.files, Verifier: o.Verifier, Scopes: o.Scopes,
		Operators: cfg.Console.Operators, Key: key, Secure: cfg.Remote.TLSCert != ""}
	if a.sessions != nil {
		co.Sessions = a.sessions
	}
	if a.console.runs != nil {
		co.Runs = a.console.runs
	}
	c, err := console.New(co)
	if err != nil {
		return err
	}
	o.Console = c.Handler()
	return nil
}

// consoleKey reads CODEXEC_CONSOLE_KEY_FILE (nil when unset: the console
// makes a key of its own).
func consoleKey(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CODEXEC_CONSOLE_KEY_FILE: %w", err)
	}
	if len(b) < 32 {
		return nil, fmt.Errorf("CODEXEC_CONSOLE_KEY_FILE %s: want at least 32 bytes, got %d", path, len(b))
	}
	return b, nil
}

// ConsoleOptions configure codexec console.
type ConsoleOptions struct {
	// Addr is the loopback host:port to serve on (port 0 picks one).
	Addr string
	// Announce receives the URL to open, with its one-time token.
	Announce func(url string)
}

// Console serves the web console over cfg's data directory and store for
// people who run codexec over stdio (codexec console): read-only, on
// loopback only, the local principal's operator view, opened once with a
// one-time token in the URL. It serves until ctx ends.
func Console(ctx context.Context, cfg config.Config, o ConsoleOptions) error {
	closeLog, err := setupLogging(cfg)
	if err != nil {
		return err
	}
	defer closeLog()
	if !loopbackAddr(o.Addr) {
		return fmt.Errorf("codexec console serves on loopback only (such as 127.0.0.1:0), not %q", o.Addr)
	}
	hist, closeHist, err := consoleHistory(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeHist()
	store, closeStore, err := openBlobStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	token := rand.Text()
	c, err := console.New(console.Options{History: hist, Files: store, OneTimeToken: token, Operators: []string{tenant.Local}, ReadOnly: true})
	if err != nil {
		return err
	}
	return serveLoopback(ctx, o, c.Handler(), token)
}

// consoleHistory opens the history codexec console reads: the shared
// store's when CODEXEC_STORE names one, else the data directory's index.
func consoleHistory(ctx context.Context, cfg config.Config) (logindex.Browser, func(), error) {
	var h any
	closeFn := func() {}
	if dsn := cfg.StoreDSN(); dsn != "" {
		st, err := pgstore.Open(ctx, dsn)
		if err != nil {
			return nil, nil, fmt.Errorf("CODEXEC_STORE: %w", err)
		}
		h, closeFn = st.History(), st.Close
	} else {
		idx := logindex.New(cfg.LogDir, filepath.Join(cfg.LogDir, logindex.FileName))
		if err := idx.Ready(); err != nil {
			_ = idx.Close()
			return nil, nil, fmt.Errorf("execution history in %s: %w", cfg.LogDir, err)
		}
		h, closeFn = idx, func() { _ = idx.Close() }
	}
	b, ok := h.(logindex.Browser)
	if !ok {
		closeFn()
		return nil, nil, fmt.Errorf("the execution history store (%T) cannot be browsed", h)
	}
	return b, closeFn, nil
}

// loopbackAddr reports whether addr is host:port on a loopback host.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	return err == nil && (host == "localhost" || ip != nil && ip.IsLoopback())
}

// serveLoopback serves h on o.Addr until ctx ends, announcing the URL with
// the one-time token. Requests naming another Host are refused: a page
// on another site cannot reach the console through DNS rebinding.
func serveLoopback(ctx context.Context, o ConsoleOptions, h http.Handler, token string) error {
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("console listen: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	guarded := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, p, err := net.SplitHostPort(r.Host)
		if err != nil || p != strconv.Itoa(port) || !loopbackAddr(r.Host) {
			http.Error(w, "Forbidden: Host "+r.Host+" not allowed", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: guarded, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn)}
	if o.Announce != nil {
		o.Announce("http://" + ln.Addr().String() + console.Prefix + "/login?token=" + token)
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
