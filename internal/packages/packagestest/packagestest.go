// Package packagestest builds pure-python wheels and serves them from a
// PEP 503 "simple" package index on 127.0.0.1, so pip installs can be tested
// without reaching a public index. For tests only.
package packagestest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Dist is one distribution version to publish: Files maps paths inside the
// wheel (e.g. "mypkg/__init__.py") to their contents.
type Dist struct {
	Name, Version string
	Files         map[string]string
}

// Wheel returns the wheel file name and bytes for d (tag py3-none-any), with
// METADATA, WHEEL and a RECORD carrying real hashes.
func Wheel(d Dist) (string, []byte, error) {
	esc := strings.ReplaceAll(d.Name, "-", "_")
	info := fmt.Sprintf("%s-%s.dist-info", esc, d.Version)
	files := map[string]string{
		info + "/METADATA": fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: codexec test package\n\n", d.Name, d.Version),
		info + "/WHEEL":    "Wheel-Version: 1.0\nGenerator: codexec-packagestest\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	}
	for k, v := range d.Files {
		files[k] = v
	}
	names := make([]string, 0, len(files))
	for k := range files {
		names = append(names, k)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, n := range names {
		if err := addFile(zw, n, files[n]); err != nil {
			return "", nil, err
		}
		sum := sha256.Sum256([]byte(files[n]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[n]))
	}
	record.WriteString(info + "/RECORD,,\n")
	if err := addFile(zw, info+"/RECORD", record.String()); err != nil {
		return "", nil, err
	}
	if err := zw.Close(); err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("%s-%s-py3-none-any.whl", esc, d.Version), buf.Bytes(), nil
}

func addFile(zw *zip.Writer, name, content string) error {
	w, err := zw.Create(name)
	if err != nil {
		return err
	}
	_, err = w.Write([]byte(content))
	return err
}

// Index is a PEP 503 simple index served over HTTP on 127.0.0.1.
type Index struct {
	srv *httptest.Server
	mu  sync.Mutex
	// projects maps normalized names to file name → wheel bytes.
	projects map[string]map[string][]byte
	requests int
}

var normRun = regexp.MustCompile(`[-_.]+`)

func normalize(name string) string { return normRun.ReplaceAllString(strings.ToLower(name), "-") }

// NewIndex builds wheels for dists and starts serving them. Close it when done.
func NewIndex(dists ...Dist) (*Index, error) {
	ix := &Index{projects: map[string]map[string][]byte{}}
	for _, d := range dists {
		name, data, err := Wheel(d)
		if err != nil {
			return nil, err
		}
		p := normalize(d.Name)
		if ix.projects[p] == nil {
			ix.projects[p] = map[string][]byte{}
		}
		ix.projects[p][name] = data
	}
	ix.srv = httptest.NewServer(http.HandlerFunc(ix.serve))
	return ix, nil
}

// URL is the index URL to give pip (--index-url / CODEXEC_PIP_INDEX_URL).
func (ix *Index) URL() string { return ix.srv.URL + "/simple/" }

// Requests is how many HTTP requests the index has answered.
func (ix *Index) Requests() int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.requests
}

// Close stops the server.
func (ix *Index) Close() { ix.srv.Close() }

func (ix *Index) serve(w http.ResponseWriter, r *http.Request) {
	ix.mu.Lock()
	ix.requests++
	ix.mu.Unlock()
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "simple":
		ix.root(w)
	case len(parts) == 2 && parts[0] == "simple":
		ix.project(w, parts[1])
	case len(parts) == 3 && parts[0] == "files":
		data, ok := ix.projects[parts[1]][parts[2]]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(data)
	default:
		http.NotFound(w, r)
	}
}

func (ix *Index) root(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprint(w, "<!DOCTYPE html><html><body>\n")
	for p := range ix.projects {
		fmt.Fprintf(w, "<a href=\"%s/\">%s</a>\n", p, p)
	}
	fmt.Fprint(w, "</body></html>\n")
}

func (ix *Index) project(w http.ResponseWriter, name string) {
	files, ok := ix.projects[normalize(name)]
	if !ok {
		http.Error(w, "no such project", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprint(w, "<!DOCTYPE html><html><body>\n")
	for f, data := range files {
		sum := sha256.Sum256(data)
		fmt.Fprintf(w, "<a href=\"../../files/%s/%s#sha256=%s\">%s</a>\n", normalize(name), html.EscapeString(f), hex.EncodeToString(sum[:]), html.EscapeString(f))
	}
	fmt.Fprint(w, "</body></html>\n")
}
