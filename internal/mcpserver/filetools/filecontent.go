package filetools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/images"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/mimetype"
)

// Result content limits: how many created files get a resource_link and how
// many images are returned inline per execution.
const (
	maxLinks   = 20
	maxImages  = 8
	maxSniffed = 200
)

// fileURI is the resource URI of a file of a session ("sessions") or of a
// one-shot run's kept artifacts ("executions"); path segments are escaped.
func fileURI(kind, id, p string) string {
	return uriBase(kind, id) + escapePath(p)
}

func uriBase(kind, id string) string {
	return "codexec://" + kind + "/" + url.PathEscape(id) + "/files/"
}

func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// uri is the resource URI of file p of the target.
func (t target) uri(p string) string { return t.URIBase + escapePath(p) }

// parseFileURI splits a fileURI back into kind, id and path.
func parseFileURI(uri string) (kind, id, p string, err error) {
	rest, ok := strings.CutPrefix(uri, "codexec://")
	kind, rest, ok2 := strings.Cut(rest, "/")
	id, rest, ok3 := strings.Cut(rest, "/files/")
	if !ok || !ok2 || !ok3 || (kind != "sessions" && kind != "executions") {
		return "", "", "", fmt.Errorf("not a codexec file URI: %s", uri)
	}
	if id, err = url.PathUnescape(id); err == nil {
		p, err = url.PathUnescape(rest)
	}
	return kind, id, p, err
}

// readTarget reads a range of one file of t.
func (s *Files) readTarget(ctx context.Context, t target, p string, off, n int64) ([]byte, files.Entry, error) {
	max := s.deps.Config.MaxDownloadBytes
	if t.Root != nil {
		return t.Root.Read(p, off, n, max)
	}
	return s.deps.Files.Read(ctx, t.ItemID, p, off, n, max)
}

// fileContent renders file bytes of media type mt as MCP content: an image
// (whole image files only), text (valid UTF-8 without NUL bytes), or an
// embedded resource blob.
func fileContent(uri string, data []byte, whole bool, mt string) mcp.Content {
	if isImage(mt) && whole {
		return &mcp.ImageContent{Data: data, MIMEType: mt}
	}
	if isText(data) {
		return &mcp.TextContent{Text: string(data)}
	}
	return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uri, MIMEType: mt, Blob: data}}
}

func isText(data []byte) bool {
	return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}

// isImage reports whether files of type mt are returned as image content.
func isImage(mt string) bool { return strings.HasPrefix(mt, "image/") }

// fileMIME is the media type of file p of t, from its first bytes, as every
// place that shows the file reports it ("" when it cannot be read).
func (s *Files) fileMIME(ctx context.Context, t target, p string) string {
	head, _, err := s.readTarget(ctx, t, p, 0, mimetype.SniffLen)
	if err != nil {
		return ""
	}
	return mimetype.Detect(p, head)
}

// RegisterResources exposes files as resources: templates for session files
// and kept artifacts, resources/read through the same confined readers as
// download_file, and resources/list extended with the caller's kept
// artifacts (listed per principal, so it is computed per request rather than
// registered on the shared server).
func (s *Files) RegisterResources(r *tool.Registrar) {
	if s.deps.Files == nil {
		return
	}
	r.AddResourceTemplate(&mcp.ResourceTemplate{Name: "execution-file", URITemplate: "codexec://executions/{execution_id}/files/{+path}",
		Description: "A file a one-shot run created or modified, kept for CODEXEC_ARTIFACT_TTL."}, s.readResource)
	r.AddResourceTemplate(&mcp.ResourceTemplate{Name: "session-file", URITemplate: "codexec://sessions/{session_id}/files/{+path}",
		Description: "A file in a live session's or context's workspace."}, s.readResource)
	r.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			lr, ok := res.(*mcp.ListResourcesResult)
			if lreq, isList := req.(*mcp.ListResourcesRequest); ok && isList && err == nil && firstPage(lreq) {
				lr.Resources = append(lr.Resources, s.keptResources(ctx)...)
			}
			return res, err
		}
	})
}

// firstPage reports whether a resources/list request asks for the first
// page (kept artifacts are appended there only, so later pages of the
// registered resources do not repeat them).
func firstPage(req *mcp.ListResourcesRequest) bool {
	return req.Params == nil || req.Params.Cursor == ""
}

// keptResources lists the caller's kept artifacts (newest first, bounded).
func (s *Files) keptResources(ctx context.Context) []*mcp.Resource {
	var out []*mcp.Resource
	for _, it := range s.deps.Files.List(ctx) {
		if !strings.HasPrefix(it.ID, "exec_") {
			continue // staged uploads are inputs, not results
		}
		t := target{ItemID: it.ID}
		for _, e := range it.Files {
			if len(out) >= 1000 {
				return out
			}
			size := e.Size
			out = append(out, &mcp.Resource{URI: fileURI("executions", it.ID, e.Path), Name: e.Path,
				Title: it.ID + ": " + e.Path, MIMEType: s.fileMIME(ctx, t, e.Path), Size: size})
		}
	}
	return out
}

func (s *Files) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	kind, id, p, err := parseFileURI(uri)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	var t target
	if kind == "executions" {
		t, err = s.resolveTarget(ctx, "", "", id)
	} else {
		t, err = s.resolveTarget(ctx, id, "", "")
	}
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	defer t.close()
	data, e, err := s.readTarget(ctx, t, p, 0, 0)
	if errors.Is(err, files.ErrNotFound) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	if int64(len(data)) < e.Size {
		return nil, fmt.Errorf("%s is %d bytes, over CODEXEC_MAX_DOWNLOAD_BYTES (%d): read it in ranges with download_file", p, e.Size, s.deps.Config.MaxDownloadBytes)
	}
	if len(fitMessage(data)) < len(data) {
		// No range in resources/read: a cut file would pass for the whole.
		return nil, fmt.Errorf("%s is %d bytes, more than one message carries to every client (%d MiB encoded): read it in ranges with download_file (offset, length; each result's next_offset says where to continue)", p, e.Size, MessageBudget>>20)
	}
	rc := &mcp.ResourceContents{URI: uri, MIMEType: mimetype.Detect(p, data)}
	if isText(data) {
		rc.Text = string(data)
	} else {
		rc.Blob = data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{rc}}, nil
}

// WithFiles adds to an execution's tool result a resource_link per created
// or modified file and, like a notebook, the images among them (matplotlib
// show() output included) as image content, fitted under
// CODEXEC_MAX_IMAGE_BYTES; an image that cannot fit keeps only its link.
func (s *Files) WithFiles(ctx context.Context, r *mcp.CallToolResult, res engine.Result) *mcp.CallToolResult {
	if s.deps.Files == nil || len(res.Artifacts) == 0 || r == nil {
		return r
	}
	t, kept, err := s.resultTarget(ctx, res)
	if err != nil {
		return r
	}
	defer t.close()
	nImg := 0
	room := MessageBudget - resultSize(r)
	for i, p := range res.Artifacts {
		if !kept(p) {
			continue
		}
		if i >= maxLinks && (nImg >= maxImages || i >= maxSniffed) {
			break // each file is sniffed: bound the reads of a run that wrote thousands
		}
		mt := s.fileMIME(ctx, t, p)
		if isImage(mt) && nImg < maxImages {
			if c := s.inlineImage(ctx, t, p, mt, room/4*3); c != nil {
				r.Content = append(r.Content, c)
				room -= base64Len(len(c.Data))
				nImg++
			}
		}
		if i < maxLinks {
			r.Content = append(r.Content, &mcp.ResourceLink{URI: t.uri(p), Name: p, MIMEType: mt})
		}
	}
	return r
}

// resultTarget is where an execution's artifacts can be read: the session's
// workspace, or the kept item of a one-shot run (kept reports which files
// made it into the store).
func (s *Files) resultTarget(ctx context.Context, res engine.Result) (target, func(string) bool, error) {
	if res.SessionID != nil {
		t, err := s.sessionTarget(ctx, *res.SessionID)
		return t, func(string) bool { return true }, err
	}
	it, err := s.deps.Files.Get(ctx, res.ExecutionID)
	if err != nil {
		return target{}, nil, err
	}
	t := target{ItemID: it.ID, URIBase: uriBase("executions", it.ID)}
	return t, func(p string) bool { _, ok := it.Has(p); return ok }, nil
}

// inlineImage is image p fitted under CODEXEC_MAX_IMAGE_BYTES and max bytes
// (what is left of the result's MessageBudget), or nil.
func (s *Files) inlineImage(ctx context.Context, t target, p, mt string, max int) *mcp.ImageContent {
	max = min(max, int(s.deps.Config.MaxImageBytes))
	if max <= 0 {
		return nil
	}
	data, e, err := s.readTarget(ctx, t, p, 0, 0)
	if err != nil || int64(len(data)) < e.Size {
		return nil
	}
	out, outMT, ok := images.Fit(data, mt, max)
	if !ok {
		return nil
	}
	return &mcp.ImageContent{Data: out, MIMEType: outMT}
}

// resultSize is about how many bytes r's content takes encoded, before
// images are added: its text, and a margin for links and structured content
// (which repeats the text's fields).
func resultSize(r *mcp.CallToolResult) int {
	n := 64 << 10
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			n += 2 * len(tc.Text)
		}
	}
	return n
}

func base64Len(n int) int { return (n + 2) / 3 * 4 }

// SessionOfURI is the session or context a codexec://sessions/{id}/files/…
// URI names, or "" for any other URI (replicas route a resources/read of
// a session's file to the replica holding the session).
func SessionOfURI(uri string) string {
	kind, id, _, err := parseFileURI(uri)
	if err != nil || kind != "sessions" {
		return ""
	}
	return id
}
