package mimetype

import (
	"bytes"
	"testing"
)

func TestDetect(t *testing.T) {
	pngHead := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	cut := append(bytes.Repeat([]byte("a"), SniffLen-1), "é"...) // é cut after its first byte
	cases := []struct {
		name string
		head []byte
		want string
	}{
		{"plot.png", pngHead, "image/png"},
		{"plot.bin", pngHead, "image/png"}, // content wins over the name
		{"notes.txt", []byte("hello"), Text},
		{"noext", []byte("hello"), Text},
		{"empty.txt", nil, Text},
		{"data.json", []byte(`{"a": 1}`), "application/json"},
		{"table.csv", []byte("a,b\n1,2\n"), "text/csv; charset=utf-8"},
		{"README.md", []byte("# hi"), "text/markdown; charset=utf-8"},
		{"fig.svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), "image/svg+xml"},
		{"fig.svg", []byte(`<?xml version="1.0"?><svg/>`), "image/svg+xml"},
		{"page.xml", []byte(`<?xml version="1.0"?><a/>`), "application/xml"},
		{"blob.bin", []byte{0, 1, 2, 3}, Binary},
		{"unknown", []byte{0xff, 0xfe, 0x00, 0x01}, Binary},
		{"fake.json", []byte{0, 1, 2, 3}, Binary}, // binary stays binary
		{"latin1.txt", []byte("caf\xe9 au lait"), Binary},
		{"long.txt", cut, Text},
		{"doc.pdf", []byte("%PDF-1.7\n"), "application/pdf"},
		{"a.zip", []byte("PK\x03\x04\x14\x00"), "application/zip"},
		{"book.xlsx", []byte("PK\x03\x04\x14\x00"), "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
		{"a.gif", []byte("GIF89a"), "image/gif"},
		{"a.jpg", []byte("\xff\xd8\xff\xe0"), "image/jpeg"},
	}
	for _, c := range cases {
		if got := Detect(c.name, c.head); got != c.want {
			t.Errorf("Detect(%q, %q…) = %q, want %q", c.name, c.head[:min(len(c.head), 12)], got, c.want)
		}
	}
}
