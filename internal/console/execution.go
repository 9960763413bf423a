package console

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/tenant"
)

// maxArtifact bounds one artifact served through the console; larger ones
// are fetched with the file tools.
const maxArtifact = 32 << 20

// inlineImages are the sniffed types shown inline; anything else
// (SVG and HTML included: they can carry script) is only downloaded.
var inlineImages = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// executionData is one execution's page.
type executionData struct {
	Entry     execlog.Entry
	Owner     string
	Artifacts []artifactLink
	// FilesNote says why kept files are not listed (expired, none kept).
	FilesNote string
}

// artifactLink is one kept file of a run.
type artifactLink struct {
	Path, URL string
	Size      int64
	Image     bool
}

// inspect finds execution id as v may see it: its own, or anyone's for an
// operator. Another principal's id is ErrNotFound, as an unknown one.
func (c *Console) inspect(r *http.Request, id string) (execlog.Entry, error) {
	return c.opts.History.Inspect(r.Context(), id, c.scope(viewer(r), ""))
}

// ownerCtx is ctx acting as the owner of e, so the file store shows an
// operator another principal's files (the console checked the scope).
func ownerCtx(ctx context.Context, owner string) context.Context {
	if owner == "" {
		owner = tenant.Local
	}
	return tenant.With(ctx, owner)
}

func (c *Console) execution(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	e, err := c.inspect(r, id)
	if err != nil {
		c.inspectFail(w, r, id, err)
		return
	}
	d := executionData{Entry: e, Owner: e.Owner}
	if d.Owner == "" {
		d.Owner = tenant.Local
	}
	d.Artifacts, d.FilesNote = c.artifacts(ownerCtx(r.Context(), e.Owner), id)
	c.render(w, http.StatusOK, "execution", page{Title: "Execution " + id, Viewer: viewer(r), Nav: "history", Data: d})
}

// inspectFail answers a failed lookup: 404 for an id the viewer may not
// see (whether or not it exists), else the history's error.
func (c *Console) inspectFail(w http.ResponseWriter, r *http.Request, id string, err error) {
	if errors.Is(err, logindex.ErrNotFound) {
		c.fail(w, r, http.StatusNotFound, "No execution "+id+" in your history.", nil)
		return
	}
	c.historyFail(w, r, err)
}

// artifacts lists the files kept of run id, with their console URLs.
func (c *Console) artifacts(ctx context.Context, id string) ([]artifactLink, string) {
	if c.opts.Files == nil {
		return nil, "Kept files are not available here."
	}
	it, err := c.opts.Files.Get(ctx, id)
	if errors.Is(err, files.ErrNotFound) {
		return nil, "No kept files (none were written, or they expired)."
	}
	if err != nil {
		return nil, "Kept files could not be listed."
	}
	var out []artifactLink
	for _, f := range it.Files {
		u := Prefix + "/executions/" + url.PathEscape(id) + "/files/" + escapePath(f.Path)
		out = append(out, artifactLink{Path: f.Path, URL: u, Size: f.Size, Image: imageName(f.Path)})
	}
	return out, ""
}

// escapePath escapes each segment of a relative path for a URL.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// imageName reports whether a file's name says it is an image the page
// may show (the bytes are sniffed again when it is served).
func imageName(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp":
		return true
	}
	return false
}

// artifact serves one kept file of a run the viewer may see: an image
// inline under its sniffed type (sandboxed), anything else as a download.
func (c *Console) artifact(w http.ResponseWriter, r *http.Request) {
	id, p := r.PathValue("id"), r.PathValue("path")
	e, err := c.inspect(r, id)
	if err != nil {
		c.inspectFail(w, r, id, err)
		return
	}
	if c.opts.Files == nil {
		c.fail(w, r, http.StatusNotFound, "Kept files are not available here.", nil)
		return
	}
	data, fe, err := c.opts.Files.Read(ownerCtx(r.Context(), e.Owner), id, p, 0, 0, maxArtifact)
	switch {
	case errors.Is(err, files.ErrNotFound):
		c.fail(w, r, http.StatusNotFound, "No such file among this run's kept files.", nil)
		return
	case err != nil:
		c.fail(w, r, http.StatusNotFound, "That file could not be read.", err)
		return
	case fe.Size > int64(len(data)):
		c.fail(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("The file is larger than %d MiB: fetch it with the file tools.", maxArtifact>>20), nil)
		return
	}
	serveBytes(w, p, data, r.URL.Query().Has("download"))
}

// serveBytes writes a file's bytes: an image inline when asked and its
// sniffed type allows it, anything else as an attachment. Both are
// sandboxed (no script, no same origin) should a browser render them.
func serveBytes(w http.ResponseWriter, name string, data []byte, download bool) {
	h := w.Header()
	h.Set("Content-Security-Policy", "sandbox")
	ctype := http.DetectContentType(data)
	if !download && contains(inlineImages, ctype) {
		h.Set("Content-Type", ctype)
		h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": path.Base(name)}))
	} else {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(name)}))
	}
	h.Set("Content-Length", fmt.Sprint(len(data)))
	_, _ = w.Write(data)
}
