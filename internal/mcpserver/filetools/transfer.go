package filetools

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/mimetype"
	"github.com/codexec/codexec/internal/tenant"
	"github.com/codexec/codexec/internal/transfer"
)

// Transfer modes of upload_file and download_file.
const (
	transferJSON = "json" // the bytes in the call and its result (the default)
	transferURL  = "url"  // a single-use URL on the HTTP listener carries them
)

// wantsURL checks a transfer argument and reports whether it asks for a URL.
func (s *Files) wantsURL(mode string) (bool, error) {
	switch mode {
	case "", transferJSON:
		return false, nil
	case transferURL:
		if s.deps.Transfers == nil {
			return false, tool.Coded(tool.CodeNotEnabled, "%v", transfer.ErrNoBase)
		}
		return true, nil
	}
	return false, tool.Invalidf("transfer must be \"json\" or \"url\", got %q", mode)
}

// issueErr codes a failure to issue a URL.
func issueErr(err error) error {
	if errors.Is(err, transfer.ErrNoBase) {
		return tool.Coded(tool.CodeNotEnabled, "%v", err)
	}
	return tool.Coded(tool.CodeLimitExceeded, "%v", err)
}

// uploadURL checks everything an upload can check before its bytes exist
// (path, mode, session) and returns the upload_url a PUT of the caller
// sends them to; the PUT answers with the result upload_file would have.
func (s *Files) uploadURL(ctx context.Context, in UploadIn, mode fs.FileMode) (UploadOut, error) {
	rel, err := files.Clean(in.Path)
	if err != nil || rel == "" {
		return UploadOut{}, tool.Invalidf("path %q: give a file path relative to the workspace", in.Path)
	}
	in.Path = rel
	if in.SessionID != "" || in.ContextID != "" {
		t, err := s.resolveTarget(ctx, in.SessionID, in.ContextID, "")
		if err != nil {
			return UploadOut{}, err
		}
		in.SessionID, in.ContextID = t.Session, ""
		t.close()
	}
	put := func(ctx context.Context, body io.Reader, size int64) (any, error) {
		return s.write(ctx, in, body, size, mode)
	}
	u, exp, err := s.deps.Transfers.IssueUpload(tenant.From(ctx), put)
	if err != nil {
		return UploadOut{}, issueErr(err)
	}
	return UploadOut{Path: rel, UploadURL: u, URLExpiresAt: &exp}, nil
}

// write stores an upload's bytes read from body (size bytes, -1 unknown):
// into the session's workspace, or (no session) as a new staged upload.
func (s *Files) write(ctx context.Context, in UploadIn, body io.Reader, size int64, mode fs.FileMode) (UploadOut, error) {
	limit := s.deps.Config.MaxUploadBytes
	if size > limit {
		return UploadOut{}, tool.Coded(tool.CodeLimitExceeded, "%d bytes exceed CODEXEC_MAX_UPLOAD_BYTES (%d)", size, limit)
	}
	opts := files.WriteOptions{Mode: mode, Overwrite: in.Overwrite, Max: limit}
	if in.SessionID == "" && in.ContextID == "" {
		id := execlog.NewID("upl_")
		it, w, err := s.deps.Files.Put(ctx, id, in.Path, body, opts)
		if err != nil {
			return UploadOut{}, tool.Classify(err)
		}
		return UploadOut{Path: w.Path, Size: w.Size, SHA256: w.SHA256, UploadID: id, ExpiresAt: &it.Expires}, nil
	}
	t, err := s.resolveTarget(ctx, in.SessionID, in.ContextID, "")
	if err != nil {
		return UploadOut{}, err
	}
	defer t.close()
	room, err := s.checkDisk(t.Root, max(size, 0))
	if err != nil {
		return UploadOut{}, err
	}
	if size < 0 && room >= 0 && room < opts.Max {
		opts.Max = room // streamed without a length: CODEXEC_DISK_LIMIT bounds it as it comes
	}
	w, err := t.Root.Write(in.Path, body, opts)
	if err != nil {
		return UploadOut{}, tool.Classify(err)
	}
	return UploadOut{Path: w.Path, Size: w.Size, SHA256: w.SHA256}, nil
}

// downloadURL checks that the file exists and returns the download_url a
// GET of the caller streams it from. The URL names this target and path,
// resolved again (and confined again) when it is used.
func (s *Files) downloadURL(ctx context.Context, in DownloadIn) (DownloadOut, error) {
	t, err := s.resolveTarget(ctx, in.SessionID, in.ContextID, in.ExecutionID)
	if err != nil {
		return DownloadOut{}, err
	}
	c, err := s.open(ctx, t, in.Path)
	t.close()
	if err != nil {
		return DownloadOut{}, tool.Classify(err)
	}
	_ = c.Close()
	sid, item := t.Session, t.ItemID
	get := func(ctx context.Context) (*transfer.Content, error) {
		t, err := s.resolveTarget(ctx, sid, "", item)
		if err != nil {
			return nil, err
		}
		defer t.close()
		return s.open(ctx, t, c.Name)
	}
	u, exp, err := s.deps.Transfers.IssueDownload(tenant.From(ctx), get)
	if err != nil {
		return DownloadOut{}, issueErr(err)
	}
	return DownloadOut{URI: t.uri(c.Name), Size: c.Size, MIMEType: c.MIMEType, DownloadURL: u, URLExpiresAt: &exp}, nil
}

// open opens file p of t for streaming: a confined descriptor of a
// session's file (its own, valid after t closes), or a kept item's file
// read in ranges from the store.
func (s *Files) open(ctx context.Context, t target, p string) (*transfer.Content, error) {
	if t.Root != nil {
		f, err := t.Root.Open(p)
		if err != nil {
			return nil, err
		}
		head := make([]byte, min(f.Size, mimetype.SniffLen))
		n, _ := f.ReadAt(head, 0)
		return &transfer.Content{ReaderAt: f, Size: f.Size, Name: f.Path, ModTime: f.MTime,
			MIMEType: mimetype.Detect(f.Path, head[:n]), Close: f.Close}, nil
	}
	head, e, err := s.deps.Files.Read(ctx, t.ItemID, p, 0, mimetype.SniffLen, mimetype.SniffLen)
	if err != nil {
		return nil, err
	}
	r := &itemReader{ctx: ctx, store: s.deps.Files, id: t.ItemID, path: e.Path}
	return &transfer.Content{ReaderAt: r, Size: e.Size, Name: e.Path, ModTime: e.MTime, MIMEType: mimetype.Detect(e.Path, head),
		Close: func() error { return nil }}, nil
}

// itemChunk is how much of a kept file one store read fetches.
const itemChunk = 1 << 20

// itemReader reads a kept item's file in bounded ranges (Store.Read), so a
// download never holds the whole file.
type itemReader struct {
	ctx   context.Context
	store files.Store
	id    string
	path  string
}

func (r *itemReader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		want := min(len(p)-n, itemChunk)
		b, e, err := r.store.Read(r.ctx, r.id, r.path, off+int64(n), int64(want), itemChunk)
		if err != nil {
			return n, err
		}
		n += copy(p[n:], b)
		if len(b) < want || off+int64(n) >= e.Size {
			return n, io.EOF
		}
	}
	return n, nil
}

// TransferHandler serves the URLs upload_file and download_file issue
// (transfer "url"), nil when they are off. Mount it behind the same bearer
// authentication as /mcp: a request's principal is its verified token's
// user, tenant.Local without auth, as tenancy decides for tool calls.
func (s *Files) TransferHandler(principal func(*http.Request) string) http.Handler {
	if s.deps.Transfers == nil || s.deps.Files == nil {
		return nil
	}
	return s.deps.Transfers.Handler(principal, refuse)
}

// refuse renders a transfer's failure with the tools' codes.
func refuse(err error) *transfer.Error {
	var te *tool.Error
	if !errors.As(tool.Classify(err), &te) {
		return nil
	}
	return &transfer.Error{Status: statusOf(te.Code), Code: te.Code, Message: te.Message}
}

// statusOf is the HTTP status of an error code.
func statusOf(code string) int {
	switch code {
	case tool.CodeInvalidParams:
		return http.StatusBadRequest
	case tool.CodeLimitExceeded:
		return http.StatusRequestEntityTooLarge
	case tool.CodeFileExists:
		return http.StatusConflict
	case tool.CodeNotAllowed:
		return http.StatusForbidden
	case tool.CodeSessionNotFound, tool.CodeFileNotFound, tool.CodeExecutionNotFound, tool.CodeContextNotFound, tool.CodeSessionLost:
		return http.StatusNotFound
	case tool.CodeServerNotReady, tool.CodeBusy:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
