package filetools

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/mimetype"
)

// UploadIn is upload_file's input.
type UploadIn struct {
	Path          string `json:"path" jsonschema:"relative to the workspace"`
	Content       string `json:"content,omitempty" jsonschema:"text"`
	ContentBase64 string `json:"content_base64,omitempty" jsonschema:"binary"`
	SessionID     string `json:"session_id,omitempty" jsonschema:"or context_id; none: stage"`
	ContextID     string `json:"context_id,omitempty"`
	Mode          string `json:"mode,omitempty" jsonschema:"octal, e.g. 755"`
	Overwrite     bool   `json:"overwrite,omitempty"`
	Transfer      string `json:"transfer,omitempty" jsonschema:"url: PUT the bytes to upload_url"`
	// Offset > 0 appends a chunk to a session file of that size (the tool
	// description says so: the wire budget has no room for a description).
	Offset int64 `json:"offset,omitempty"`
}

// UploadOut is upload_file's structured result.
type UploadOut struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// SHA256 is the written file's; empty for an appended chunk.
	SHA256 string `json:"sha256,omitempty"`
	// UploadID names a staged upload (no session given).
	UploadID  string     `json:"upload_id,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// UploadURL (transfer "url") takes one PUT of the file's bytes, which
	// answers with this result filled in, until URLExpiresAt.
	UploadURL    string     `json:"upload_url,omitempty"`
	URLExpiresAt *time.Time `json:"url_expires_at,omitempty"`
}

// DownloadIn is download_file's input.
type DownloadIn struct {
	Path        string `json:"path"`
	SessionID   string `json:"session_id,omitempty"`
	ContextID   string `json:"context_id,omitempty"`
	ExecutionID string `json:"execution_id,omitempty"`
	Offset      int64  `json:"offset,omitempty"`
	Length      int64  `json:"length,omitempty"`
	Transfer    string `json:"transfer,omitempty" jsonschema:"url: GET download_url"`
}

// DownloadOut is download_file's structured result (the bytes are in the
// content: text, image, or an embedded resource blob).
type DownloadOut struct {
	URI      string `json:"uri"`
	Size     int64  `json:"size"`
	Offset   int64  `json:"offset"`
	Length   int    `json:"length"`
	MIMEType string `json:"mime_type"`
	// NextOffset is set when bytes remain after this range.
	NextOffset *int64 `json:"next_offset,omitempty"`
	// DownloadURL (transfer "url") serves the whole file to one GET
	// (Range accepted) until URLExpiresAt; the result has no content then.
	DownloadURL  string     `json:"download_url,omitempty"`
	URLExpiresAt *time.Time `json:"url_expires_at,omitempty"`
}

// ListFilesIn is list_files' input.
type ListFilesIn struct {
	SessionID   string `json:"session_id,omitempty"`
	ContextID   string `json:"context_id,omitempty"`
	ExecutionID string `json:"execution_id,omitempty"`
	Path        string `json:"path,omitempty"`
	Recursive   bool   `json:"recursive,omitempty"`
	Limit       int    `json:"limit,omitempty" jsonschema:"default 200"`
}

// Register adds the files toolset (none without a files store).
func (s *Files) Register(r *tool.Registrar) {
	if s.deps.Files == nil {
		return
	}
	tool.Add(r, &mcp.Tool{Name: "upload_file", Title: "Upload file",
		Description: "Write a file into a session (offset: append), or stage it for execute_code/run_script files (upload_id).",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(true), OpenWorldHint: tool.Ptr(false)}}, s.uploadFile)
	tool.Add(r, &mcp.Tool{Name: "download_file", Title: "Download file",
		Description: "Read a file of a session or of a run's kept artifacts (execution_id); offset/length for ranges (default length 4 MiB).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: tool.Ptr(false)}}, s.downloadFile)
	tool.Add(r, &mcp.Tool{Name: "list_files", Title: "List files",
		Description: "List files of a session, of a run's kept artifacts, or (no id) your uploads and artifacts.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: tool.Ptr(false)}}, s.listFiles)
}

// target is where a files call reads or writes: a live session's workspace
// (Root set) or a kept item of the store (ItemID set).
type target struct {
	Root    *files.Root
	ItemID  string
	URIBase string // codexec://sessions/<id>/files/ or codexec://executions/<id>/files/
	Session string
}

// close releases the target's root, if any.
func (t target) close() {
	if t.Root != nil {
		_ = t.Root.Close()
	}
}

// resolveTarget picks the session/context or execution named by the call.
func (s *Files) resolveTarget(ctx context.Context, sessionID, contextID, executionID string) (target, error) {
	sid := sessionID
	if sid == "" {
		sid = contextID
	}
	switch {
	case sid != "" && executionID != "":
		return target{}, tool.Invalidf("give a session_id/context_id or an execution_id, not both")
	case executionID != "":
		if _, err := s.deps.Files.Get(ctx, executionID); err != nil {
			return target{}, tool.Coded(tool.CodeExecutionNotFound, "%v", err)
		}
		return target{ItemID: executionID, URIBase: uriBase("executions", executionID)}, nil
	case sid != "":
		return s.sessionTarget(ctx, sid)
	}
	return target{}, tool.Invalidf("give a session_id, context_id or execution_id")
}

func (s *Files) sessionTarget(ctx context.Context, id string) (target, error) {
	if s.deps.Sessions == nil {
		return target{}, tool.Coded(tool.CodeNotEnabled, "sessions are not enabled on this server (CODEXEC_TOOLSETS)")
	}
	sess, err := s.deps.Sessions.Get(ctx, id)
	if err != nil {
		return target{}, tool.Classify(err)
	}
	root, err := sess.OpenWorkspace()
	if err != nil {
		return target{}, err
	}
	return target{Root: root, Session: sess.ID, URIBase: uriBase("sessions", sess.ID)}, nil
}

func (s *Files) downloadFile(ctx context.Context, _ *mcp.CallToolRequest, in DownloadIn) (*mcp.CallToolResult, DownloadOut, error) {
	if url, err := s.wantsURL(in.Transfer); err != nil || url {
		if err == nil && (in.Offset != 0 || in.Length != 0) {
			err = tool.Invalidf("offset and length go with transfer \"json\"; a download_url takes a Range header")
		}
		if err != nil {
			return nil, DownloadOut{}, err
		}
		out, err := s.downloadURL(ctx, in)
		return nil, out, err
	}
	t, err := s.resolveTarget(ctx, in.SessionID, in.ContextID, in.ExecutionID)
	if err != nil {
		return nil, DownloadOut{}, err
	}
	defer t.close()
	data, e, err := s.readTarget(ctx, t, in.Path, in.Offset, s.rangeLength(in.Length))
	if err != nil {
		return nil, DownloadOut{}, tool.Classify(err)
	}
	if in.Offset+int64(len(data)) < e.Size {
		data = trimPartialRune(data)
	}
	data = fitMessage(data)
	whole := in.Offset == 0 && int64(len(data)) == e.Size
	uri := t.uri(e.Path)
	var mt string
	if in.Offset == 0 && (whole || len(data) >= mimetype.SniffLen) {
		mt = mimetype.Detect(e.Path, data) // the range holds the head already
	} else {
		mt = s.fileMIME(ctx, t, e.Path)
	}
	c := fileContent(uri, data, whole, mt)
	out := DownloadOut{URI: uri, Size: e.Size, Offset: in.Offset, Length: len(data), MIMEType: mt}
	if next := in.Offset + int64(len(data)); next < e.Size {
		out.NextOffset = &next
	}
	return &mcp.CallToolResult{Content: []mcp.Content{c}}, out, nil
}

// DefaultRangeBytes is how much download_file returns when the caller gives
// no length: as base64 in one JSON-RPC message 4 MiB is ~5.6 MB, well within
// MessageBudget. Longer ranges a caller asks for (up to
// CODEXEC_MAX_DOWNLOAD_BYTES) are cut to fit MessageBudget; next_offset says
// where the next range starts.
const DefaultRangeBytes = 4 << 20

// rangeLength is the length download_file reads: the caller's, or (none
// given) the default range within CODEXEC_MAX_DOWNLOAD_BYTES.
func (s *Files) rangeLength(requested int64) int64 {
	if requested > 0 {
		return requested
	}
	return min(DefaultRangeBytes, s.deps.Config.MaxDownloadBytes)
}

// trimPartialRune drops an incomplete UTF-8 sequence cut off at the end of a
// text range, so the range still reads as text (the next range starts there).
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= 3 && i <= len(b); i++ {
		if !utf8.Valid(b) && utf8.Valid(b[:len(b)-i]) {
			return b[:len(b)-i]
		}
	}
	return b
}

func (s *Files) uploadFile(ctx context.Context, _ *mcp.CallToolRequest, in UploadIn) (*mcp.CallToolResult, UploadOut, error) {
	url, err := s.wantsURL(in.Transfer)
	if err == nil && url && (in.Content != "" || in.ContentBase64 != "") {
		err = tool.Invalidf("transfer \"url\" takes no content or content_base64: PUT the bytes to the upload_url it returns")
	}
	if err != nil {
		return nil, UploadOut{}, err
	}
	mode, err := parseMode(in.Mode)
	if err != nil {
		return nil, UploadOut{}, err
	}
	if in.Offset != 0 {
		out, err := s.appendChunk(ctx, in, url)
		return nil, out, err
	}
	if url {
		out, err := s.uploadURL(ctx, in, mode)
		return nil, out, err
	}
	body, size, err := s.uploadContent(in)
	if err != nil {
		return nil, UploadOut{}, err
	}
	out, err := s.write(ctx, in, body, size, mode)
	return nil, out, err
}

// appendChunk writes the content of a call with an offset at that offset
// of an existing session file whose size it is: a file sent in chunks, each
// decoded as it is written, so neither end holds the whole file.
func (s *Files) appendChunk(ctx context.Context, in UploadIn, url bool) (UploadOut, error) {
	switch {
	case in.Offset < 0:
		return UploadOut{}, tool.Invalidf("offset %d: give the size the file has so far", in.Offset)
	case url:
		return UploadOut{}, tool.Invalidf("offset goes with transfer \"json\"; an upload_url takes the whole file in one PUT")
	case in.Mode != "":
		return UploadOut{}, tool.Invalidf("mode goes with the first chunk (no offset)")
	case in.SessionID == "" && in.ContextID == "":
		return UploadOut{}, tool.Invalidf("offset appends to a session's file: give session_id or context_id (a staged upload is one call)")
	}
	body, size, err := s.uploadContent(in)
	if err != nil {
		return UploadOut{}, err
	}
	limit := s.deps.Config.MaxUploadBytes
	if in.Offset+size > limit {
		return UploadOut{}, tool.Coded(tool.CodeLimitExceeded, "%d bytes exceed CODEXEC_MAX_UPLOAD_BYTES (%d)", in.Offset+size, limit)
	}
	t, err := s.resolveTarget(ctx, in.SessionID, in.ContextID, "")
	if err != nil {
		return UploadOut{}, err
	}
	defer t.close()
	if room, err := s.checkDisk(t.Root, max(size, 0)); err != nil {
		return UploadOut{}, err
	} else if room >= 0 && size < 0 {
		limit = min(limit, in.Offset+room)
	}
	w, err := t.Root.Append(in.Path, body, in.Offset, limit)
	if err != nil {
		return UploadOut{}, tool.Classify(err)
	}
	return UploadOut{Path: w.Path, Size: w.Size}, nil
}

// uploadContent is the reader of the one content field given and its
// size. content_base64 is decoded as it is written, never held decoded
// whole: a corrupt one fails the write, which then leaves nothing behind.
func (s *Files) uploadContent(in UploadIn) (io.Reader, int64, error) {
	// Both empty is an empty file.
	if in.Content != "" && in.ContentBase64 != "" {
		return nil, 0, tool.Invalidf("give content or content_base64, not both")
	}
	if in.ContentBase64 == "" {
		return strings.NewReader(in.Content), int64(len(in.Content)), nil
	}
	b64 := strings.TrimRight(in.ContentBase64, "\n")
	enc := base64.StdEncoding
	if !strings.HasSuffix(b64, "=") && len(b64)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	n := int64(enc.DecodedLen(len(b64)))
	if strings.HasSuffix(b64, "==") {
		n -= 2
	} else if strings.HasSuffix(b64, "=") {
		n--
	}
	if strings.ContainsAny(b64, "\r\n") {
		n = -1 // line breaks, which the decoder skips: the size is known once written
	}
	return b64Reader{base64.NewDecoder(enc, strings.NewReader(b64))}, n, nil
}

// b64Reader names content_base64 in its decoding errors.
type b64Reader struct{ r io.Reader }

func (b b64Reader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if bad := base64.CorruptInputError(0); errors.As(err, &bad) {
		err = tool.Invalidf("content_base64 is not valid base64: %v", bad)
	}
	return n, err
}

// parseMode reads the octal permission bits of mode ("" is the default).
func parseMode(mode string) (fs.FileMode, error) {
	if mode == "" {
		return 0, nil
	}
	m, err := strconv.ParseUint(mode, 8, 32)
	if err != nil || m > 0o777 {
		return 0, tool.Invalidf("mode %q: give octal permission bits such as 644 or 755", mode)
	}
	return fs.FileMode(m), nil
}

// checkDisk refuses an upload of n bytes that would take a
// codexec-created workspace beyond CODEXEC_DISK_LIMIT (a user's own
// working_dir is not bounded here), and returns the room left after it
// (-1: unbounded), which bounds an upload whose size is not known ahead.
func (s *Files) checkDisk(root *files.Root, n int64) (int64, error) {
	limit := s.deps.Config.DiskLimitBytes
	sb := filepath.Clean(s.deps.Config.SandboxDir) + string(filepath.Separator)
	if limit <= 0 || !strings.HasPrefix(root.Dir(), sb) {
		return -1, nil
	}
	used, _ := root.Usage(20000)
	if used+n > limit {
		return 0, tool.Coded(tool.CodeLimitExceeded, "the workspace holds %d bytes; %d more would exceed CODEXEC_DISK_LIMIT (%d)", used, n, limit)
	}
	return limit - used - n, nil
}

func (s *Files) listFiles(ctx context.Context, _ *mcp.CallToolRequest, in ListFilesIn) (*mcp.CallToolResult, files.Listing, error) {
	limit := in.Limit
	if limit <= 0 {
		limit = 200
	}
	limit = min(limit, 5000)
	if in.SessionID == "" && in.ContextID == "" && in.ExecutionID == "" {
		return nil, s.listKept(ctx, limit), nil
	}
	t, err := s.resolveTarget(ctx, in.SessionID, in.ContextID, in.ExecutionID)
	if err != nil {
		return nil, files.Listing{}, err
	}
	defer t.close()
	if t.Root != nil {
		l, err := t.Root.List(in.Path, in.Recursive, limit)
		if err != nil {
			return nil, l, tool.Classify(err)
		}
		return nil, l, nil
	}
	it, err := s.deps.Files.Get(ctx, t.ItemID)
	if err != nil {
		return nil, files.Listing{}, tool.Classify(err)
	}
	return nil, itemListing(it, in.Path, limit), nil
}

// itemListing lists a kept item's files below dir (all of them: kept items
// are flat lists of files).
func itemListing(it files.Item, dir string, limit int) files.Listing {
	prefix, _ := files.Clean(dir)
	l := files.Listing{Entries: []files.Entry{}}
	for _, e := range it.Files {
		if prefix != "" && !strings.HasPrefix(e.Path, prefix+"/") && e.Path != prefix {
			continue
		}
		if len(l.Entries) >= limit {
			l.Truncated = true
			break
		}
		l.Entries = append(l.Entries, e)
	}
	return l
}

// listKept lists the caller's staged uploads and kept artifacts as
// "<id>/<path>" entries (not the stored results of background runs, items
// run_…, which get_run reads).
func (s *Files) listKept(ctx context.Context, limit int) files.Listing {
	l := files.Listing{Entries: []files.Entry{}}
	for _, it := range s.deps.Files.List(ctx) {
		if strings.HasPrefix(it.ID, "run_") {
			continue
		}
		for _, e := range it.Files {
			if len(l.Entries) >= limit {
				l.Truncated = true
				return l
			}
			e.Path = it.ID + "/" + e.Path
			l.Entries = append(l.Entries, e)
		}
	}
	return l
}

// StageUploads checks that every upload id is a live upload of the caller
// and returns the step that copies them into the one-shot run's workspace
// before it starts (engine.Request.Prepare); nil when there are none.
func (s *Files) StageUploads(ctx context.Context, ids []string) (func(*files.Root) error, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if s.deps.Files == nil {
		return nil, tool.Coded(tool.CodeNotEnabled, "files are not enabled on this server (CODEXEC_TOOLSETS)")
	}
	for _, id := range ids {
		if _, err := s.deps.Files.Get(ctx, id); err != nil {
			return nil, fmt.Errorf("files: %w", err)
		}
	}
	return func(ws *files.Root) error { return s.copyUploads(ctx, ids, ws) }, nil
}

// copyUploads writes staged uploads into root (a session's workspace or a
// run's), refusing to replace existing files.
func (s *Files) copyUploads(ctx context.Context, ids []string, root *files.Root) error {
	for _, id := range ids {
		if _, err := s.deps.Files.CopyTo(ctx, id, root); err != nil {
			return err
		}
	}
	return nil
}

// UploadsToSession copies staged uploads into a session's workspace.
func (s *Files) UploadsToSession(ctx context.Context, sessionID string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if s.deps.Files == nil {
		return tool.Coded(tool.CodeNotEnabled, "files are not enabled on this server (CODEXEC_TOOLSETS)")
	}
	t, err := s.sessionTarget(ctx, sessionID)
	if err != nil {
		return err
	}
	defer t.close()
	return s.copyUploads(ctx, ids, t.Root)
}
