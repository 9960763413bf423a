package console

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/logindex"
)

// TestVisible: control characters become visible symbols; text,
// newlines and tabs stay.
func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"plain <b>":          "plain <b>",
		"\x1b[31mred\x1b[0m": "␛[31mred␛[0m",
		"a\tb\nc\rd":         "a\tb\nc␍d",
		"bell\x07 del\x7f":   "bell␇ del␡",
		"nul\x00":            "nul␀",
	} {
		if got := visible(in); got != want {
			t.Errorf("visible(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParseWhen: the filters take a date, a datetime-local value or RFC
// 3339, in UTC unless they say otherwise; anything else is an error.
func TestParseWhen(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{"", time.Time{}, false},
		{"2026-12-01", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), false},
		{"2026-12-01T13:45", time.Date(2026, 12, 1, 13, 45, 0, 0, time.UTC), false},
		{"2026-12-01T13:45:00+02:00", time.Date(2026, 12, 1, 11, 45, 0, 0, time.UTC), false},
		{"yesterday", time.Time{}, true},
	} {
		got, err := parseWhen(tc.in)
		if (err != nil) != tc.bad || !got.Equal(tc.want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

// TestChart: bars stack each bucket's statuses from the bottom, scaled to
// the busiest bucket; an unknown status is drawn as "other".
func TestChart(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ch := newChart([]logindex.Bucket{
		{Start: t0, ByStatus: map[string]int{"success": 3, "failed": 1}},
		{Start: t0.Add(time.Hour), ByStatus: map[string]int{}},
		{Start: t0.Add(2 * time.Hour), ByStatus: map[string]int{"success": 1, "weird\"><x": 1}},
	})
	type s struct {
		Class string
		Y, H  int
	}
	var got [][]s
	for _, b := range ch.Bars {
		var segs []s
		for _, g := range b.Segs {
			segs = append(segs, s{g.StatusClass, g.Y, g.H})
		}
		got = append(got, segs)
	}
	want := [][]s{{{"st-success", 40, 120}, {"st-failed", 0, 40}}, nil, {{"st-success", 120, 40}, {"st-other", 80, 40}}}
	if diff := cmp.Diff(want, got); diff != "" || ch.Max != 4 {
		t.Errorf("bars (-want +got)\n%s\nmax %d", diff, ch.Max)
	}
}

// TestHighlight: comments, strings, numbers and keywords are classed;
// code is kept byte for byte; an unknown language stays plain.
func TestHighlight(t *testing.T) {
	for _, tc := range []struct {
		lang, code string
		want       []token
	}{
		{"python", "def f(x): # <b>\n  return 'a\\'b' + 42", []token{{"hl-keyword", "def"}, {"", " f(x): "}, {"hl-comment", "# <b>"},
			{"", "\n  "}, {"hl-keyword", "return"}, {"", " "}, {"hl-string", `'a\'b'`}, {"", " + "}, {"hl-number", "42"}}},
		{"node", "const s = `a\nb` /* c */ // d", []token{{"hl-keyword", "const"}, {"", " s = "}, {"hl-string", "`a\nb`"}, {"", " "},
			{"hl-comment", "/* c */"}, {"", " "}, {"hl-comment", "// d"}}},
		{"bash", "echo \"unclosed\nls", []token{{"hl-keyword", "echo"}, {"", " "}, {"hl-string", "\"unclosed"}, {"", "\nls"}}},
		{"ruby", "puts 1", []token{{"", "puts 1"}}},
	} {
		got := highlight(tc.lang, tc.code)
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(token{})); diff != "" {
			t.Errorf("%s %q (-want +got)\n%s", tc.lang, tc.code, diff)
		}
	}
}
