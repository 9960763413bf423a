package transfer

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/codexec/codexec/internal/tenant"
)

// Error is an answer the work of a ticket gives instead of a result: an
// HTTP status and the stable code and message of docs/errors.md.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Refusal is how Upload and Download work reports a failure in the
// {"error","code"} shape of the tools; any other error is INTERNAL_ERROR.
type Refusal func(error) *Error

// Handler serves tickets at PathPrefix+token. principal names the
// authenticated caller of a request (mount it behind the same
// authentication as /mcp); refuse renders the work's errors.
func (t *Tickets) Handler(principal func(*http.Request) string, refuse Refusal) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.URL.Path, PathPrefix)
		if !ok || tok == "" || strings.Contains(tok, "/") {
			writeError(w, &Error{http.StatusNotFound, "FILE_NOT_FOUND", errGone.Error()})
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPut {
			w.Header().Set("Allow", "GET, HEAD, PUT")
			writeError(w, &Error{http.StatusMethodNotAllowed, "INVALID_PARAMS", "transfer URLs take PUT (upload_url) or GET (download_url)"})
			return
		}
		p := principal(r)
		tk, err := t.take(tok, p, false)
		if err == nil {
			err = fits(tk, r.Method)
		}
		if err == nil && r.Method != http.MethodHead {
			tk, err = t.take(tok, p, true) // used up now: a second request finds it gone
		}
		if err != nil {
			writeError(w, ticketError(err))
			return
		}
		r = r.WithContext(tenant.With(r.Context(), p))
		if tk.upload != nil {
			t.serveUpload(w, r, tk, refuse)
			return
		}
		t.serveDownload(w, r, tk, refuse)
	})
}

// LocalOnly serves next to local clients only, for a listener on a
// loopback address without authentication (a stdio server's): it refuses
// a request with an Origin header (browsers add one to every cross-origin
// PUT and to their preflights) or whose Host is not a loopback address or
// localhost (a DNS-rebound name), so a web page cannot reach the listener
// even though only a URL's token would let it do anything there.
func LocalOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		ip := net.ParseIP(strings.Trim(host, "[]"))
		if r.Header.Get("Origin") != "" || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
			writeError(w, &Error{http.StatusForbidden, "NOT_ALLOWED", "transfer URLs here serve local clients only: no Origin header, a loopback Host"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fits refuses a method that does not fit the ticket, leaving it usable.
func fits(tk *ticket, method string) error {
	switch {
	case tk.upload != nil && method != http.MethodPut:
		return errUploadMethod
	case tk.download != nil && method == http.MethodPut:
		return errDownloadMethod
	}
	return nil
}

var (
	errUploadMethod   = errors.New("this is an upload_url: PUT the file's bytes to it")
	errDownloadMethod = errors.New("this is a download_url: GET it")
)

func ticketError(err error) *Error {
	switch err {
	case errForeign:
		return &Error{http.StatusForbidden, "NOT_ALLOWED", err.Error()}
	case errUploadMethod, errDownloadMethod:
		return &Error{http.StatusMethodNotAllowed, "INVALID_PARAMS", err.Error()}
	}
	return &Error{http.StatusNotFound, "FILE_NOT_FOUND", err.Error()}
}

// serveUpload streams the PUT body into the ticket's upload.
func (t *Tickets) serveUpload(w http.ResponseWriter, r *http.Request, tk *ticket, refuse Refusal) {
	res, err := tk.upload(r.Context(), r.Body, r.ContentLength)
	if err != nil {
		writeError(w, refusal(err, refuse))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

// serveDownload streams the ticket's file: http.ServeContent answers HEAD
// and Range requests and sets Content-Length.
func (t *Tickets) serveDownload(w http.ResponseWriter, r *http.Request, tk *ticket, refuse Refusal) {
	c, err := tk.download(r.Context())
	if err != nil {
		writeError(w, refusal(err, refuse))
		return
	}
	defer func() {
		if c.Close != nil {
			_ = c.Close()
		}
	}()
	if c.MIMEType != "" {
		w.Header().Set("Content-Type", c.MIMEType)
	}
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": lastElem(c.Name)}))
	w.Header().Set("Cache-Control", "no-store")
	http.ServeContent(w, r, "", c.ModTime, io.NewSectionReader(c.ReaderAt, 0, c.Size))
}

func refusal(err error, refuse Refusal) *Error {
	if refuse != nil {
		if e := refuse(err); e != nil {
			return e
		}
	}
	slog.Warn("transfer failed", "err", err)
	return &Error{http.StatusInternalServerError, "INTERNAL_ERROR", err.Error()}
}

func lastElem(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// writeError answers with the {"error","code"} object of docs/errors.md.
func writeError(w http.ResponseWriter, e *Error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": e.Message, "code": e.Code})
}
