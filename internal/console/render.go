package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// page is what every template gets: the title, the viewer for the
// navigation, and the page's own data.
type page struct {
	Title  string
	Viewer Viewer
	// Nav is the navigation entry to mark as current.
	Nav  string
	Data any
}

// pages are the parsed templates, one set per page (each with the layout).
type pages struct{ byName map[string]*template.Template }

// pageNames are the pages, each templates/NAME.html with the layout.
var pageNames = []string{"login", "error", "overview", "history", "execution", "sessions", "runs", "run"}

func parsePages() (*pages, error) {
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", name, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// render writes page name, rendered in full before anything is sent so
// that a template error is a clean 500.
func (c *Console) render(w http.ResponseWriter, status int, name string, pg page) {
	var buf bytes.Buffer
	if err := c.pages.byName[name].Execute(&buf, pg); err != nil {
		slog.Error("console: rendering a page failed", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// staticHandler serves the embedded CSS.
func staticHandler() http.Handler {
	sub, _ := fs.Sub(staticFS, "static")
	return http.StripPrefix(Prefix+"/static/", http.FileServerFS(sub))
}

var funcs = template.FuncMap{
	"term":      visible,
	"highlight": highlight,
	"ms":        formatMs,
	"dur":       formatDuration,
	"bytes":     formatBytes,
	"when":      formatTime,
	"ago":       ago,
	"deref":     func(s *string) string { return deref(s) },
	"int64":     func(i int) int64 { return int64(i) },
	"derefInt":  func(i *int) string { return derefInt(i) },
}

// visible shows terminal control characters as visible symbols (ESC as
// ␛, other C0 controls as their control pictures) so that output never
// drives the page or hides text; newlines and tabs stay.
func visible(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == 0x1b:
			b.WriteRune('␛')
		case r == 0x7f:
			b.WriteRune('␡')
		case isControl(r):
			b.WriteRune(0x2400 + r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isControl(r rune) bool { return (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f }

func formatMs(ms int64) string { return formatDuration(time.Duration(ms) * time.Millisecond) }

func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}

func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return formatDuration(time.Since(t).Truncate(time.Second)) + " ago"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefInt(i *int) string {
	if i == nil {
		return ""
	}
	return fmt.Sprint(*i)
}
