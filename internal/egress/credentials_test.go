package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testSecret is the value every test credential carries; no error or
// printout may contain it.
const testSecret = "s3cr3t-VALUE-do-not-print"

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadCredentials(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("EGRESS_TEST_GH", testSecret)
	secretFile := writeFile(t, dir, "secret", testSecret+"\n")
	want := []Credential{
		{Host: Rule{Host: "api.github.com"}, Header: "Authorization", ValueEnv: "EGRESS_TEST_GH",
			Placeholder: "GITHUB_TOKEN", value: testSecret},
		{Host: Rule{Host: "*.example.com", Port: 8443}, Header: "X-Api-Key", ValueFile: secretFile,
			Placeholder: "EXAMPLE_KEY", Principals: []string{"alice", "bob"}, value: testSecret},
	}
	tests := map[string]string{
		"yaml": `
credentials:
  - host: API.github.com          # case does not matter
    header: Authorization
    value_env: EGRESS_TEST_GH
    placeholder: GITHUB_TOKEN
  - host: "*.example.com:8443"
    header: x-api-key
    value_file: ` + secretFile + `
    placeholder: EXAMPLE_KEY
    principals: [alice, bob]
`,
		"json": `{"credentials": [
  {"host": "api.github.com", "header": "Authorization", "value_env": "EGRESS_TEST_GH", "placeholder": "GITHUB_TOKEN"},
  {"host": "*.example.com:8443", "header": "X-Api-Key", "value_file": "` + secretFile + `",
   "placeholder": "EXAMPLE_KEY", "principals": ["alice", "bob"]}]}`,
		"empty list": "credentials: []\n",
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := LoadCredentials(writeFile(t, dir, name, content))
			if err != nil {
				t.Fatal(err)
			}
			w := want
			if name == "empty list" {
				w = []Credential{}
			}
			if diff := cmp.Diff(w, got, cmp.AllowUnexported(Credential{})); diff != "" {
				t.Errorf("credentials (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadCredentialsRefuses(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("EGRESS_TEST_GH", testSecret)
	t.Setenv("EGRESS_TEST_EMPTY", "")
	t.Setenv("EGRESS_TEST_NEWLINE", testSecret+"\nX-Injected: 1")
	emptyFile := writeFile(t, dir, "empty-secret", "\n")
	entry := func(fields string) string {
		return "credentials:\n  - {host: ok.example.com, header: X-Key, value_env: EGRESS_TEST_GH, placeholder: OK_KEY}\n  - " + fields + "\n"
	}
	tests := []struct {
		name, content string
		index         int // -1: the file as a whole
		want          string
	}{
		{"empty file", "", -1, "the file is empty"},
		{"not yaml", "credentials: [\n", -1, "did not find expected"},
		{"unknown top-level field", "credential: []\n", -1, `unknown field "credential"`},
		{"unknown entry field", entry("{host: a.com, header: X-Key, value: " + testSecret + ", placeholder: A}"), -1, `unknown field "value"`},
		{"wrong type quotes no value", entry("{host: a.com, header: X-Key, value_env: EGRESS_TEST_GH, placeholder: A, principals: " + testSecret + "}"), -1, "found a string where a list of strings belongs"},
		{"missing host", entry("{header: X-Key, value_env: EGRESS_TEST_GH, placeholder: A}"), 1, "host is missing"},
		{"bad host port", entry("{host: 'a.com:99999', header: X-Key, value_env: EGRESS_TEST_GH, placeholder: A}"), 1, "port must be a number"},
		{"missing header", entry("{host: a.com, value_env: EGRESS_TEST_GH, placeholder: A}"), 1, "not a valid HTTP header name"},
		{"header with space", entry("{host: a.com, header: 'X Key', value_env: EGRESS_TEST_GH, placeholder: A}"), 1, "not a valid HTTP header name"},
		{"header Host", entry("{host: a.com, header: host, value_env: EGRESS_TEST_GH, placeholder: A}"), 1, "header Host is managed by the proxy"},
		{"header Content-Length", entry("{host: a.com, header: content-length, value_env: EGRESS_TEST_GH, placeholder: A}"), 1, "managed by the proxy"},
		{"header Transfer-Encoding", entry("{host: a.com, header: Transfer-Encoding, value_env: EGRESS_TEST_GH, placeholder: A}"), 1, "managed by the proxy"},
		{"header Connection", entry("{host: a.com, header: Connection, value_env: EGRESS_TEST_GH, placeholder: A}"), 1, "managed by the proxy"},
		{"both sources", entry("{host: a.com, header: X-Key, value_env: EGRESS_TEST_GH, value_file: /etc/hostname, placeholder: A}"), 1, "exactly one of value_env"},
		{"no source", entry("{host: a.com, header: X-Key, placeholder: A}"), 1, "exactly one of value_env"},
		{"placeholder missing", entry("{host: a.com, header: X-Key, value_env: EGRESS_TEST_GH}"), 1, "not a valid environment variable name"},
		{"placeholder digit", entry("{host: a.com, header: X-Key, value_env: EGRESS_TEST_GH, placeholder: 1A}"), 1, "not a valid environment variable name"},
		{"placeholder dash", entry("{host: a.com, header: X-Key, value_env: EGRESS_TEST_GH, placeholder: A-B}"), 1, "not a valid environment variable name"},
		{"placeholder PATH", entry("{host: a.com, header: X-Key, value_env: EGRESS_TEST_GH, placeholder: PATH}"), 1, "already relies on"},
		{"placeholder http_proxy", entry("{host: a.com, header: X-Key, value_env: EGRESS_TEST_GH, placeholder: http_proxy}"), 1, "already relies on"},
		{"placeholder LD_PRELOAD", entry("{host: a.com, header: X-Key, value_env: EGRESS_TEST_GH, placeholder: LD_PRELOAD}"), 1, "already relies on"},
		{"placeholder duplicate", entry("{host: a.com, header: X-Key, value_env: EGRESS_TEST_GH, placeholder: OK_KEY}"), 1, "already used by credentials[0]"},
		{"empty principal", entry("{host: a.com, header: X-Key, value_env: EGRESS_TEST_GH, placeholder: A, principals: ['']}"), 1, "empty name"},
		{"env unset", entry("{host: a.com, header: X-Key, value_env: EGRESS_TEST_UNSET_VAR, placeholder: A}"), 1, "value_env EGRESS_TEST_UNSET_VAR is not set or empty"},
		{"env empty", entry("{host: a.com, header: X-Key, value_env: EGRESS_TEST_EMPTY, placeholder: A}"), 1, "value_env EGRESS_TEST_EMPTY is not set or empty"},
		{"env with line break", entry("{host: a.com, header: X-Key, value_env: EGRESS_TEST_NEWLINE, placeholder: A}"), 1, "control character"},
		{"file missing", entry("{host: a.com, header: X-Key, value_file: " + dir + "/absent, placeholder: A}"), 1, "no such file"},
		{"file empty", entry("{host: a.com, header: X-Key, value_file: " + emptyFile + ", placeholder: A}"), 1, "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, dir, "creds.yaml", tt.content)
			creds, err := LoadCredentials(path)
			var ce *CredentialError
			if !errors.As(err, &ce) {
				t.Fatalf("LoadCredentials = %v, %v; want a *CredentialError", creds, err)
			}
			msg := err.Error()
			if ce.Index != tt.index || !strings.Contains(msg, tt.want) || !strings.Contains(msg, path) {
				t.Errorf("error %q (index %d); want index %d, the file's path and %q", msg, ce.Index, tt.index, tt.want)
			}
			if tt.index >= 0 && !strings.Contains(msg, fmt.Sprintf("credentials[%d]", tt.index)) {
				t.Errorf("error %q does not name the entry credentials[%d]", msg, tt.index)
			}
			if strings.Contains(msg, testSecret) {
				t.Errorf("error %q contains the credential's value", msg)
			}
		})
	}
	if _, err := LoadCredentials(filepath.Join(dir, "absent.yaml")); err == nil || !strings.Contains(err.Error(), "absent.yaml") {
		t.Errorf("missing file: %v; want an error naming it", err)
	}
}

func TestCredentialNeverPrintsValue(t *testing.T) {
	t.Setenv("EGRESS_TEST_GH", testSecret)
	c := Credential{Host: Rule{Host: "api.github.com"}, Header: "Authorization", ValueEnv: "EGRESS_TEST_GH", Placeholder: "GITHUB_TOKEN"}
	store, err := newCredentialStore([]Credential{c})
	if err != nil {
		t.Fatal(err)
	}
	held := store.creds[0]
	if held.value != testSecret {
		t.Fatal("the store did not read the value")
	}
	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		fmt.Fprintf(&out, verb+"\n", held)
		fmt.Fprintf(&out, verb+"\n", &held)
		fmt.Fprintf(&out, verb+"\n", []Credential{held})
		fmt.Fprintf(&out, verb+"\n", store)
		fmt.Fprintf(&out, verb+"\n", held.value)
	}
	logger := slog.New(slog.NewJSONHandler(&out, nil))
	logger.Info("loaded", "credential", held, "store", store, "value", held.value)
	logger.Info("loaded", "credentials", []Credential{held})
	js, err := json.Marshal(held)
	if err != nil {
		t.Fatal(err)
	}
	out.Write(js)
	if strings.Contains(out.String(), testSecret) {
		t.Fatalf("the value was printed:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "GITHUB_TOKEN") || !strings.Contains(out.String(), redacted) {
		t.Errorf("printouts should name the credential and say the value is redacted:\n%s", out.String())
	}
}

func TestCredentialStoreMatch(t *testing.T) {
	t.Setenv("EGRESS_TEST_A", "value-a")
	t.Setenv("EGRESS_TEST_B", "value-b")
	store, err := newCredentialStore([]Credential{
		{Host: Rule{Host: "api.example.com"}, Header: "Authorization", ValueEnv: "EGRESS_TEST_A", Placeholder: "A_TOKEN", Principals: []string{"alice"}},
		{Host: Rule{Host: "*.example.com"}, Header: "X-Key", ValueEnv: "EGRESS_TEST_B", Placeholder: "B_TOKEN"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		principal, host string
		port            int
		want            string // placeholder of the match, "" for none
		value           string
	}{
		{"alice", "api.example.com", 443, "A_TOKEN", "value-a"},
		{"alice", "API.example.com.", 80, "A_TOKEN", "value-a"},
		{"bob", "api.example.com", 443, "B_TOKEN", "value-b"},
		{"", "other.example.com", 443, "B_TOKEN", "value-b"},
		{"alice", "example.com", 443, "", ""},
		{"alice", "api.example.com", 8443, "", ""},
		{"alice", "evil.com", 443, "", ""},
	}
	for _, tt := range tests {
		c, value, ok := store.match(tt.principal, tt.host, tt.port)
		got := ""
		if ok {
			got = c.Placeholder
		}
		if got != tt.want || value != tt.value {
			t.Errorf("match(%q, %q, %d) = %q, %q; want %q, %q", tt.principal, tt.host, tt.port, got, value, tt.want, tt.value)
		}
	}
	if _, _, ok := (*credentialStore)(nil).match("alice", "api.example.com", 443); ok {
		t.Error("a nil store matched")
	}
	_, err = newCredentialStore([]Credential{store.creds[0], store.creds[0]})
	if err == nil || !strings.Contains(err.Error(), "already used by credentials[0]") {
		t.Errorf("a store with one placeholder twice: %v; want it refused", err)
	}
	env := store.placeholderEnv("bob")
	if len(env) != 1 || !strings.HasPrefix(env[0], "B_TOKEN="+placeholderPrefix) {
		t.Errorf("placeholderEnv(bob) = %q; want B_TOKEN only", env)
	}
}

func TestPlaceholderValue(t *testing.T) {
	a := placeholderValue(Credential{Placeholder: "A_TOKEN"})
	if a != placeholderValue(Credential{Placeholder: "A_TOKEN", ValueEnv: "OTHER"}) {
		t.Error("the placeholder depends on more than the variable's name")
	}
	b := placeholderValue(Credential{Placeholder: "B_TOKEN"})
	if a == b || len(a) != len(b) || len(a) != len(placeholderPrefix)+32 || !strings.HasPrefix(a, placeholderPrefix) {
		t.Errorf("placeholders %q and %q: want distinct, %d characters, starting %q", a, b, len(placeholderPrefix)+32, placeholderPrefix)
	}
}
