// Package mimetype names the media type of a file from its content, the one
// answer every place a file appears gives (result links, resources/list,
// resources/read, download_file): the first SniffLen bytes are sniffed as
// browsers do (net/http.DetectContentType); when sniffing only finds
// "some text" or "some binary", a small built-in extension table refines it
// (JSON, CSV, SVG, Markdown, … are text to a sniffer), but only with a type
// of the same nature, so a binary file named .json is still binary. The table
// is built in, not read from the host's mime.types, so the answer is the same
// on every machine.
package mimetype

import (
	"net/http"
	"path"
	"strings"
	"unicode/utf8"
)

// SniffLen is how many leading bytes of a file Detect looks at; callers pass
// at most this many (more are ignored).
const SniffLen = 512

// Generic answers: what the content says when the sniffer finds nothing more
// specific.
const (
	Text   = "text/plain; charset=utf-8"
	Binary = "application/octet-stream"
)

// textByExt refines text content by file extension.
var textByExt = map[string]string{
	".json":     "application/json",
	".geojson":  "application/geo+json",
	".ipynb":    "application/x-ipynb+json",
	".jsonl":    "application/jsonl",
	".ndjson":   "application/x-ndjson",
	".csv":      "text/csv; charset=utf-8",
	".tsv":      "text/tab-separated-values; charset=utf-8",
	".svg":      "image/svg+xml",
	".md":       "text/markdown; charset=utf-8",
	".markdown": "text/markdown; charset=utf-8",
	".html":     "text/html; charset=utf-8",
	".htm":      "text/html; charset=utf-8",
	".xml":      "application/xml",
	".css":      "text/css; charset=utf-8",
	".js":       "text/javascript; charset=utf-8",
	".mjs":      "text/javascript; charset=utf-8",
	".ts":       "text/x-typescript; charset=utf-8",
	".py":       "text/x-python; charset=utf-8",
	".sh":       "text/x-shellscript; charset=utf-8",
	".yaml":     "application/yaml",
	".yml":      "application/yaml",
	".toml":     "application/toml",
	".tex":      "text/x-tex; charset=utf-8",
}

// binaryByExt refines binary content (including zip containers, which
// office documents are) by file extension.
var binaryByExt = map[string]string{
	".xlsx":    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".docx":    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	".pptx":    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	".parquet": "application/vnd.apache.parquet",
	".npy":     "application/x-npy",
	".npz":     "application/zip",
	".sqlite":  "application/vnd.sqlite3",
	".db":      "application/vnd.sqlite3",
	".xz":      "application/x-xz",
	".bz2":     "application/x-bzip2",
	".zst":     "application/zstd",
}

// Detect returns the media type of a file named name whose first bytes are
// head (the whole file when it is shorter than SniffLen). An empty file is
// text. Text is reported only for valid UTF-8, which is also when the file's
// bytes come back as text rather than as a binary blob.
func Detect(name string, head []byte) string {
	if len(head) > SniffLen {
		head = head[:SniffLen]
	}
	sniffed := http.DetectContentType(head)
	ext := strings.ToLower(path.Ext(name))
	switch {
	case strings.HasPrefix(sniffed, "text/plain"):
		if !validUTF8(head, len(head) == SniffLen) {
			return lookup(binaryByExt, ext, Binary)
		}
		return lookup(textByExt, ext, Text)
	case strings.HasPrefix(sniffed, "text/xml"), strings.HasPrefix(sniffed, "text/html"):
		return lookup(textByExt, ext, sniffed)
	case sniffed == Binary, sniffed == "application/zip":
		return lookup(binaryByExt, ext, sniffed)
	}
	return sniffed
}

func lookup(table map[string]string, ext, fallback string) string {
	if mt, ok := table[ext]; ok {
		return mt
	}
	return fallback
}

// validUTF8 reports whether b is UTF-8; when cut is set (b is only the
// start of the file) a rune cut off at its end is allowed.
func validUTF8(b []byte, cut bool) bool {
	if !cut {
		return utf8.Valid(b)
	}
	for i := 0; i <= 3 && i <= len(b); i++ {
		if utf8.Valid(b[:len(b)-i]) {
			return i == 0 || !utf8.FullRune(b[len(b)-i:])
		}
	}
	return false
}
