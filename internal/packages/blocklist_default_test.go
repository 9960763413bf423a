package packages

import (
	"errors"
	"testing"
)

// TestDefaultBlocklist checks the shipped list on the examples and
// that version-specific entries block only their releases.
func TestDefaultBlocklist(t *testing.T) {
	cases := []struct {
		setting, extra, lang, pkg string
		blocked                   bool
	}{
		{"", "", Node, "crossenv", true},
		{"", "", Node, "cross-env", false},
		{"", "", Python, "crossenv", false},
		{"", "", Node, "event-stream@3.3.6", true},
		{"", "", Node, "event-stream@=3.3.6", true},
		{"", "", Node, "event-stream@4.0.1", false},
		{"", "", Node, "event-stream", true}, // unpinned could resolve to 3.3.6
		{"", "", Node, "event-stream@^3.3.0", true},
		{"", "", Python, "python3-dateutil", true},
		{"", "", Python, "python-dateutil", false},
		{"", "", Python, "jeIlyfish", true},
		{"", "", Python, "jellyfish", false},
		{"", "", Python, "colourama==0.1", true},
		{"", "", Python, "colorama", false},
		{"", "", Python, "ctx==0.2.2", true},
		{"", "", Python, "ctx==0.3.0", false},
		{"", "", Python, "ctx>=0.1", true},
		{"none", "", Node, "crossenv", false},
		{"left-pad", "", Node, "crossenv", false},
		{"left-pad", "", Node, "left-pad", true},
		{"", "left-pad,python:evil==1.0", Node, "left-pad", true},
		{"", "left-pad,python:evil==1.0", Node, "crossenv", true},
		{"", "left-pad,python:evil==1.0", Python, "evil==1.0", true},
		{"", "left-pad,python:evil==1.0", Python, "evil==2.0", false},
	}
	for _, c := range cases {
		bl, err := ResolveBlocklist(c.setting, c.extra, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseSpec(c.lang, c.pkg)
		if err != nil {
			t.Fatalf("%s %q: %v", c.lang, c.pkg, err)
		}
		var be *BlockedError
		if got := errors.As(bl.Check(s), &be); got != c.blocked {
			t.Errorf("setting=%q extra=%q %s %q: blocked=%v (%v), want %v", c.setting, c.extra, c.lang, c.pkg, got, bl.Check(s), c.blocked)
		}
	}
	if DefaultBlocklist().Len() < 50 {
		t.Errorf("default list has %d names", DefaultBlocklist().Len())
	}
	if _, err := ResolveBlocklist("", "not a name!", t.TempDir()); err == nil {
		t.Error("a bad CODEXEC_PACKAGE_BLOCKLIST_EXTRA entry was accepted")
	}
}
