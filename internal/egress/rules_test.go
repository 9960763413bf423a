package egress

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in      string
		want    Rule
		wantErr string // substring of the error; "" = no error
	}{
		{in: "api.example.com", want: Rule{Host: "api.example.com"}},
		{in: " API.Example.COM:8443 ", want: Rule{Host: "api.example.com", Port: 8443}},
		{in: "*.example.com", want: Rule{Host: "*.example.com"}},
		{in: "*.example.com:443", want: Rule{Host: "*.example.com", Port: 443}},
		{in: "10.1.2.3", want: Rule{Host: "10.1.2.3"}},
		{in: "10.1.2.3:5432", want: Rule{Host: "10.1.2.3", Port: 5432}},
		{in: "[2001:db8::1]:443", want: Rule{Host: "2001:db8::1", Port: 443}},
		{in: "[2001:DB8::1]", want: Rule{Host: "2001:db8::1"}},
		{in: "2001:db8::1", want: Rule{Host: "2001:db8::1"}},
		{in: "localhost", want: Rule{Host: "localhost"}},
		{in: "", wantErr: "is empty"},
		{in: "https://api.example.com", wantErr: "scheme or path"},
		{in: "api.example.com/v1", wantErr: "scheme or path"},
		{in: "api.example.com:0", wantErr: "1 to 65535"},
		{in: "api.example.com:65536", wantErr: "1 to 65535"},
		{in: "api.example.com:http", wantErr: "1 to 65535"},
		{in: "*.com", wantErr: "too broad"},
		{in: "a.*.example.com", wantErr: "first label"},
		{in: "*", wantErr: "first label"},
		{in: "api_x.example.com", wantErr: "letters, digits"},
		{in: "-api.example.com", wantErr: "hyphen"},
		{in: "api..example.com", wantErr: "empty label"},
		{in: "bücher.example", wantErr: "letters, digits"},
		{in: "[10.0.0.1]:80", wantErr: "not an IPv6"},
		{in: "[2001:db8::1", wantErr: "missing ]"},
		{in: "fe80::1%eth0", wantErr: "zone"},
	}
	for _, tt := range tests {
		got, err := ParseRule(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "network rule") {
				t.Errorf("ParseRule(%q) error = %v, want one naming the rule and containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseRule(%q) (-want +got):\n%s", tt.in, diff)
		}
		back, err := ParseRule(got.String())
		if err != nil || back != got {
			t.Errorf("ParseRule(%q).String() = %q does not parse back (%v, %v)", tt.in, got.String(), back, err)
		}
	}
}

func TestParseRules(t *testing.T) {
	got, err := ParseRules("a.example.com, *.b.example.org:8080,10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{{Host: "a.example.com"}, {Host: "*.b.example.org", Port: 8080}, {Host: "10.0.0.1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got, err := ParseRules("  "); got != nil || err != nil {
		t.Errorf(`ParseRules("  ") = %v, %v; want nil, nil`, got, err)
	}
	if _, err := ParseRules("a.example.com,,b.example.com"); err == nil {
		t.Error("an empty rule in the list was accepted")
	}
}

func mustPolicy(t testing.TB, s string) Policy {
	t.Helper()
	rules, err := ParseRules(s)
	if err != nil {
		t.Fatal(err)
	}
	return Policy{Allow: rules}
}

func TestPolicyAllows(t *testing.T) {
	p := mustPolicy(t, "api.example.com,*.cdn.example.net:8443,10.0.0.7:5432,[2001:db8::5]:443,*.0.1")
	tests := []struct {
		host string
		port int
		want bool
	}{
		{"api.example.com", 443, true},
		{"API.EXAMPLE.COM.", 80, true},
		{"api.example.com", 8080, false},
		{"example.com", 443, false},
		{"x.api.example.com", 443, false},
		{"a.cdn.example.net", 8443, true},
		{"a.b.cdn.example.net", 8443, true},
		{"cdn.example.net", 8443, false},
		{"a.cdn.example.net", 443, false},
		{"evilcdn.example.net", 8443, false},
		{"10.0.0.7", 5432, true},
		{"10.0.0.7", 443, false},
		{"[2001:db8::5]", 443, true},
		{"2001:db8:0::5", 443, true},
		{"::ffff:10.0.0.7", 5432, true},
		{"10.0.0.1", 443, false}, // a wildcard never matches an address
	}
	for _, tt := range tests {
		if got := p.Allows(tt.host, tt.port); got != tt.want {
			t.Errorf("Allows(%q, %d) = %v, want %v", tt.host, tt.port, got, tt.want)
		}
	}
	if (Policy{}).Allows("api.example.com", 443) || !(Policy{}).None() {
		t.Error("the zero policy must allow nothing")
	}
}

func TestPolicyWithin(t *testing.T) {
	ceiling := mustPolicy(t, "api.example.com,*.example.org,db.example.net:5432,split.example.com:80,split.example.com:443,10.0.0.7")
	tests := []struct {
		requested string
		outside   string // the rule named by the error; "" = within
	}{
		{"api.example.com", ""},
		{"api.example.com:443", ""},
		{"a.example.org:80,*.b.example.org", ""},
		{"db.example.net:5432", ""},
		{"split.example.com", ""}, // 80 and 443 from two ceiling rules
		{"10.0.0.7:443", ""},
		{"api.example.com:8443", "api.example.com:8443"},
		{"example.org", "example.org"},
		{"*.example.org:22", "*.example.org:22"},
		{"db.example.net", "db.example.net"},
		{"api.example.com,other.example.com", "other.example.com"},
		{"*.com.example.org.evil", "*.com.example.org.evil"},
		{"10.0.0.8", "10.0.0.8"},
	}
	for _, tt := range tests {
		err := mustPolicy(t, tt.requested).Within(ceiling)
		if tt.outside == "" {
			if err != nil {
				t.Errorf("%q within ceiling: %v", tt.requested, err)
			}
			continue
		}
		var oe *OutsideError
		if !errors.As(err, &oe) || oe.Rule.String() != tt.outside {
			t.Errorf("%q: error %v, want an OutsideError naming %q", tt.requested, err, tt.outside)
		}
	}
}
