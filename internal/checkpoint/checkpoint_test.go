package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/files"
)

func TestEncodeDecode(t *testing.T) {
	h := Header{Language: "python", TakenAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Report: Report{Values: []string{"x"}, Lost: map[string]string{"fh": "open file"}},
		Files:  []File{{Path: "d", Mode: 0o755, Dir: true}, {Path: "d/a.txt", Mode: 0o644, Size: 3}, {Path: "b", Mode: 0o600, Size: 2}}}
	b, err := Encode(h, []byte("STATE"), []byte("abcde"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	h.InterpBytes = 5
	if diff := cmp.Diff(h, d.Header); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	if string(d.Interp) != "STATE" || string(d.Data) != "abcde" {
		t.Errorf("interp %q data %q", d.Interp, d.Data)
	}
	if _, err := Encode(h, nil, []byte("abc")); err == nil {
		t.Error("Encode accepted file data of the wrong length")
	}
}

func TestDecodeRefusesBadLengths(t *testing.T) {
	good, err := Encode(Header{Language: "node", Files: []File{{Path: "a", Size: 2}}}, []byte("s"), []byte("xy"))
	if err != nil {
		t.Fatal(err)
	}
	headerLen := binary.LittleEndian.Uint32(good[len(Magic):])
	withHeader := func(json string) []byte {
		b := append([]byte(Magic), binary.LittleEndian.AppendUint32(nil, uint32(len(json)))...)
		return append(append(b, json...), "sxy"...)
	}
	for name, b := range map[string][]byte{
		"empty":            nil,
		"not a checkpoint": []byte("hello world"),
		"header too long":  append([]byte(Magic), 0xff, 0xff, 0xff, 0x0f),
		"truncated":        good[:len(Magic)+4+int(headerLen)+1],
		"negative interp":  withHeader(`{"interp_bytes":-1,"files":[]}`),
		"interp too long":  withHeader(`{"interp_bytes":99,"files":[]}`),
		"file too long":    withHeader(`{"interp_bytes":1,"files":[{"p":"a","s":9223372036854775807},{"p":"b","s":2}]}`),
		"negative file":    withHeader(`{"interp_bytes":1,"files":[{"p":"a","s":-2},{"p":"b","s":4}]}`),
		"dir with data":    withHeader(`{"interp_bytes":1,"files":[{"p":"a","s":2,"d":true}]}`),
		"data left over":   withHeader(`{"interp_bytes":1,"files":[{"p":"a","s":1}]}`),
	} {
		if _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

func TestSealer(t *testing.T) {
	s, err := NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewSealer(bytes.Repeat([]byte{8}, 32))
	plain := []byte(Magic + "state")
	aad := AAD("alice", "sess_1", "ck_1")
	sealed := s.Seal(plain, aad)
	if bytes.Contains(sealed, []byte("state")) || !bytes.HasPrefix(sealed, []byte(SealedMagic)) {
		t.Fatalf("sealed %q", sealed)
	}
	if got, err := s.Open(sealed, aad); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open: %q %v", got, err)
	}
	flipped := append([]byte(nil), sealed...)
	flipped[len(flipped)-3] ^= 1
	var nilSealer *Sealer
	for name, c := range map[string]struct {
		s   *Sealer
		b   []byte
		aad []byte
	}{
		"another key":          {other, sealed, aad},
		"another session":      {s, sealed, AAD("alice", "sess_2", "ck_1")},
		"another owner":        {s, sealed, AAD("bob", "sess_1", "ck_1")},
		"altered":              {s, flipped, aad},
		"truncated":            {s, sealed[:10], aad},
		"plain with a key set": {s, plain, aad},
		"sealed without a key": {nilSealer, sealed, aad},
	} {
		if _, err := c.s.Open(c.b, c.aad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if got, err := nilSealer.Open(plain, aad); err != nil || !bytes.Equal(got, plain) || !bytes.Equal(nilSealer.Seal(plain, aad), plain) {
		t.Errorf("no key: %q %v", got, err)
	}
}

func TestReportBoundedMergeSecrets(t *testing.T) {
	var many []string
	lost := map[string]string{}
	for i := range MaxNames + 5 {
		many = append(many, fmt.Sprintf("v%03d", i))
		lost[fmt.Sprintf("l%03d", i)] = "why"
	}
	b := Report{Values: many, Lost: lost}.Bounded()
	if len(b.Values) != MaxNames || len(b.Lost) != MaxNames || len(b.Notes) != 2 || !strings.HasPrefix(b.Notes[0], "5 more values") {
		t.Errorf("bounded: %d values, %d lost, notes %v", len(b.Values), len(b.Lost), b.Notes)
	}
	r := Report{Values: []string{"api_TOKEN", "x", "ssh_key", "monkey", "Password1"}}
	if got := r.SecretValues(); strings.Join(got, ",") != "Password1,api_TOKEN,monkey,ssh_key" {
		t.Errorf("secret values: %v", got)
	}
	taken := Report{Values: []string{"a", "b"}, Lost: map[string]string{"fh": "open file"}, Files: 2, Notes: []string{"n1"}}
	got := taken.Merge(Report{Values: []string{"a"}, Lost: map[string]string{"b": "unpickling failed: x"}, Notes: []string{"n2"}})
	want := Report{Values: []string{"a"}, Lost: map[string]string{"fh": "open file", "b": "unpickling failed: x"}, Files: 2, Notes: []string{"n1", "n2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merge (-want +got):\n%s", diff)
	}
}

// TestArchiveExtract: what a workspace holds besides directories and
// regular files is listed, never followed; extraction recreates modes.
func TestArchiveExtract(t *testing.T) {
	src := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	must(t, os.WriteFile(outside, []byte("host secret"), 0o600))
	must(t, os.MkdirAll(filepath.Join(src, "sub", "empty"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "sub", "a.txt"), []byte("alpha"), 0o640))
	must(t, os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(src, "link")))
	must(t, syscall.Mkfifo(filepath.Join(src, "pipe"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "hard1"), []byte("h"), 0o644))
	must(t, os.Link(filepath.Join(src, "hard1"), filepath.Join(src, "hard2")))
	root, err := files.OpenRoot(src)
	must(t, err)
	defer root.Close()
	w, err := Archive(root, 1<<20)
	must(t, err)
	if len(w.Lost) != 4 || w.Lost["link"] != "symlink not carried" || w.Lost["pipe"] != "fifo not carried" || w.Lost["hard1"] == "" {
		t.Errorf("lost: %v", w.Lost)
	}
	if bytes.Contains(w.Data, []byte("host secret")) {
		t.Fatal("the archive followed a symlink out of the workspace")
	}
	if _, err := Archive(root, 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("archive over its bound: %v", err)
	}
	plain, err := Encode(Header{Files: w.Files}, nil, w.Data)
	must(t, err)
	d, err := Decode(plain)
	must(t, err)
	dst := t.TempDir()
	droot, err := files.OpenRoot(dst)
	must(t, err)
	defer droot.Close()
	n, lost := Extract(droot, d)
	if n != 2 || len(lost) != 0 {
		t.Errorf("extracted %d files, lost %v", n, lost)
	}
	for p, want := range map[string]os.FileMode{"sub/a.txt": 0o640, "run.sh": 0o755, "sub/empty": 0o755 | os.ModeDir} {
		st, err := os.Stat(filepath.Join(dst, p))
		if err != nil || st.Mode() != want {
			t.Errorf("%s: %v %v, want %v", p, err, st.Mode(), want)
		}
	}
}

// TestExtractConfined: names from an altered checkpoint cannot leave the
// root.
func TestExtractConfined(t *testing.T) {
	dst := t.TempDir()
	root, err := files.OpenRoot(dst)
	must(t, err)
	defer root.Close()
	d := Decoded{Header: Header{Files: []File{{Path: "../escape", Size: 1}, {Path: "/etc/x", Size: 1}, {Path: "ok", Size: 1}}}, Data: []byte("abc")}
	n, lost := Extract(root, d)
	if n != 1 || len(lost) != 2 {
		t.Errorf("extracted %d, lost %v", n, lost)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dst), "escape")); err == nil {
		t.Error("a file was written outside the root")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
