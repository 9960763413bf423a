package helper

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestRunMessageRoundTrip decodes what EncodeRun encodes (the payload after
// the length line).
func TestRunMessageRoundTrip(t *testing.T) {
	type run struct {
		Cwd  string
		Env  []string
		Code string
		Args []string
	}
	cases := map[string]run{
		"plain":          {"/w", []string{"PATH=/usr/bin", "HOME=/w"}, "echo 1", []string{"bash"}},
		"no env or args": {"/w", nil, "true", nil},
		"newlines and =": {"/a b", []string{"X=a=b\nc"}, "echo 1\necho 2\n", []string{"bash", "", "x y"}},
		"empty code":     {"/", []string{"A="}, "", []string{"bash"}},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			msg := string(EncodeRun(in.Cwd, in.Env, in.Code, in.Args))
			head, payload, _ := strings.Cut(msg, "\n")
			if n, err := strconv.Atoi(head); err != nil || n != len(payload) {
				t.Fatalf("length line %q for a payload of %d bytes", head, len(payload))
			}
			var out run
			var err error
			out.Cwd, out.Env, out.Code, out.Args, err = DecodeRun([]byte(payload))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(in, out, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("round trip (-sent +decoded):\n%s", d)
			}
		})
	}
}

func TestDecodeRunRejects(t *testing.T) {
	for _, payload := range []string{"", "/w", "/w\x00x\x00code", "/w\x005\x00A=1\x00code", "/w\x00-1\x00code"} {
		if _, _, _, _, err := DecodeRun([]byte(payload)); err == nil {
			t.Errorf("DecodeRun(%q) accepted", payload)
		}
	}
}
