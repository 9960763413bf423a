package filetools

import (
	"errors"
	"io"
	"testing"

	"github.com/codexec/codexec/internal/mcpserver/tool"
)

func TestTrimPartialRune(t *testing.T) {
	s := []byte("aé€") // é is 2 bytes, € is 3
	for cut, want := range map[int]string{1: "a", 2: "a", 3: "aé", 4: "aé", 5: "aé", 6: "aé€"} {
		if got := string(trimPartialRune(s[:cut])); got != want {
			t.Errorf("cut %d: %q, want %q", cut, got, want)
		}
	}
}

// TestUploadContent: content_base64 in every form decodes to the same bytes
// with the right size (-1 when line breaks hide it), and corrupt base64
// reads as INVALID_PARAMS.
func TestUploadContent(t *testing.T) {
	s := New(Deps{})
	for _, c := range []struct {
		in   UploadIn
		want string
		size int64
		code string
	}{
		{UploadIn{Content: "héllo"}, "héllo", 6, ""},
		{UploadIn{ContentBase64: "aGk="}, "hi", 2, ""},
		{UploadIn{ContentBase64: "aGk=\n"}, "hi", 2, ""},
		{UploadIn{ContentBase64: "aGk"}, "hi", 2, ""},
		{UploadIn{ContentBase64: "aGVs\nbG8="}, "hello", -1, ""},
		{UploadIn{ContentBase64: "aGVsbG8h"}, "hello!", 6, ""},
		{UploadIn{}, "", 0, ""},
		{UploadIn{ContentBase64: "a*b="}, "", 3, tool.CodeInvalidParams},
	} {
		r, size, err := s.uploadContent(c.in)
		if err != nil {
			t.Fatalf("%+v: %v", c.in, err)
		}
		got, err := io.ReadAll(r)
		var te *tool.Error
		if c.code != "" {
			if !errors.As(err, &te) || te.Code != c.code {
				t.Errorf("%+v: error %v, want code %s", c.in, err, c.code)
			}
			continue
		}
		if err != nil || string(got) != c.want || size != c.size {
			t.Errorf("%+v: %q size %d (%v), want %q size %d", c.in, got, size, err, c.want, c.size)
		}
	}
	if _, _, err := s.uploadContent(UploadIn{Content: "a", ContentBase64: "YQ=="}); err == nil {
		t.Error("content and content_base64 together were accepted")
	}
}
