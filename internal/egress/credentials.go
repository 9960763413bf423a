package egress

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/textproto"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Credential is one secret the proxy adds to requests for Host: the program
// in the sandbox sees only Placeholder=placeholderValue(c) in its
// environment, and the proxy puts the real value in Header on the way out.
// The value is read once, when the credential is loaded, and kept in
// memory only; every way of printing or logging a Credential leaves it out.
type Credential struct {
	// Host is the rule of the hosts (and port) the value may be sent to.
	Host Rule
	// Header is the canonical name of the HTTP request header carrying it.
	Header string
	// ValueEnv or ValueFile (exactly one) says where the value came from:
	// a variable of the server's environment, or a file.
	ValueEnv, ValueFile string
	// Placeholder is the environment variable the sandbox sees.
	Placeholder string
	// Principals may use the credential; empty means everyone.
	Principals []string

	value secret // read at load; see newCredentialStore
}

// CredentialError says what is wrong with a credentials file: which entry
// (Index ≥ 0, with its Host) or the file as a whole (Index -1). It never
// contains a credential's value.
type CredentialError struct {
	File   string
	Index  int
	Host   string
	Reason string
}

func (e *CredentialError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("egress credentials file %s: %s", e.File, e.Reason)
	}
	return fmt.Sprintf("egress credentials file %s: credentials[%d] (host %q): %s", e.File, e.Index, e.Host, e.Reason)
}

// maxCredentialFile bounds what LoadCredentials reads: the file lists a few
// entries, and a value file holds one header value.
const maxCredentialFile = 1 << 20

// credentialFile is the file's shape; YAML and JSON read the same way (JSON
// is YAML to the parser).
type credentialFile struct {
	Credentials []credentialEntry `yaml:"credentials"`
}

type credentialEntry struct {
	Host        string   `yaml:"host"`
	Header      string   `yaml:"header"`
	ValueEnv    string   `yaml:"value_env"`
	ValueFile   string   `yaml:"value_file"`
	Placeholder string   `yaml:"placeholder"`
	Principals  []string `yaml:"principals"`
}

// LoadCredentials reads and checks the credentials file at path (YAML or
// JSON) and reads every value it references, from the server's
// environment or from a file. Any problem is a *CredentialError naming the
// entry; nothing is returned unless every entry is usable.
func LoadCredentials(path string) ([]Credential, error) {
	fileErr := func(format string, a ...any) error {
		return &CredentialError{File: path, Index: -1, Reason: fmt.Sprintf(format, a...)}
	}
	data, err := readLimited(path, maxCredentialFile)
	if err != nil {
		return nil, fileErr("%v", err)
	}
	var f credentialFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fileErr("the file is empty; it needs a list under \"credentials:\"")
		}
		return nil, fileErr("%s", yamlReason(err))
	}
	creds := make([]Credential, 0, len(f.Credentials))
	seen := map[string]int{}
	for i, e := range f.Credentials {
		c, reason := e.credential(seen, i)
		if reason != "" {
			return nil, &CredentialError{File: path, Index: i, Host: e.Host, Reason: reason}
		}
		creds = append(creds, c)
	}
	return creds, nil
}

// credential checks e (the i-th entry; seen maps placeholders already
// used to their entry) and reads its value. The reason is "" when e is
// usable.
func (e credentialEntry) credential(seen map[string]int, i int) (Credential, string) {
	rule, err := ParseRule(e.Host)
	if e.Host == "" {
		return Credential{}, "host is missing: give a host rule as in CODEXEC_EGRESS_ALLOW (api.example.com, *.example.com, either with :port)"
	} else if err != nil {
		return Credential{}, err.Error()
	}
	c := Credential{Host: rule, Header: textproto.CanonicalMIMEHeaderKey(e.Header), ValueEnv: e.ValueEnv,
		ValueFile: e.ValueFile, Placeholder: e.Placeholder, Principals: e.Principals}
	if reason := c.ready(seen, i); reason != "" {
		return Credential{}, reason
	}
	return c, ""
}

// checkNames checks every field of c but the value.
func (c *Credential) checkNames() string {
	switch {
	case c.Header == "" || !isToken(c.Header):
		return fmt.Sprintf("header %q is not a valid HTTP header name", c.Header)
	case reservedHeaders[c.Header]:
		return fmt.Sprintf("header %s is managed by the proxy and cannot carry a credential", c.Header)
	case (c.ValueEnv == "") == (c.ValueFile == ""):
		return "give exactly one of value_env (a variable of the server's environment) or value_file (a file holding the value)"
	case !envName.MatchString(c.Placeholder):
		return fmt.Sprintf("placeholder %q is not a valid environment variable name (letters, digits, _; not starting with a digit)", c.Placeholder)
	case reservedVar(c.Placeholder):
		return fmt.Sprintf("placeholder %s is a variable the sandbox already relies on; choose another name", c.Placeholder)
	case slices.Contains(c.Principals, ""):
		return "principals has an empty name"
	}
	return ""
}

// readValue reads the value from where c says, checking it can be sent as
// a header value. Reasons name the source, never the value.
func (c *Credential) readValue() (secret, string) {
	var v string
	if c.ValueEnv != "" {
		v = os.Getenv(c.ValueEnv)
		if v == "" {
			return "", fmt.Sprintf("value_env %s is not set or empty in the server's environment; set it before starting the server", c.ValueEnv)
		}
	} else {
		data, err := readLimited(c.ValueFile, maxCredentialFile)
		if err != nil {
			return "", fmt.Sprintf("value_file: %v", err)
		}
		// A trailing newline is how editors and `echo` end a file, not
		// part of the secret.
		v = strings.TrimRight(string(data), "\r\n")
		if v == "" {
			return "", fmt.Sprintf("value_file %s is empty; put the whole header value in it", c.ValueFile)
		}
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
		return "", fmt.Sprintf("the value from %s has a control character (a line break inside it?) and cannot be sent in a header", c.source())
	}
	return secret(v), ""
}

func (c *Credential) source() string {
	if c.ValueEnv != "" {
		return "value_env " + c.ValueEnv
	}
	return "value_file " + c.ValueFile
}

// readLimited reads a whole regular file of at most limit bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return data, nil
}

var (
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// yamlValue is the parser's type error, which quotes the value it
	// found: it is reworded without it, in case someone pasted a secret
	// where a name belongs.
	yamlValue   = regexp.MustCompile("cannot unmarshal !!(\\w+)(?: `[^`]*`)? into (\\S+)")
	yamlUnknown = regexp.MustCompile(`field (\S+) not found in type \S+`)
	yamlKinds   = map[string]string{"str": "a string", "seq": "a list", "map": "a mapping", "int": "a number",
		"bool": "true/false", "float": "a number", "null": "nothing"}
	goKinds = map[string]string{"string": "a string", "[]string": "a list of strings",
		"[]egress.credentialEntry": "a list of entries", "egress.credentialEntry": "an entry (host, header, …)",
		"egress.credentialFile": `a mapping with "credentials:"`}
)

// yamlReason turns a parser error into a sentence for the operator.
func yamlReason(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	s = yamlValue.ReplaceAllStringFunc(s, func(m string) string {
		sub := yamlValue.FindStringSubmatch(m)
		return fmt.Sprintf("found %s where %s belongs", or(yamlKinds[sub[1]], sub[1]), or(goKinds[sub[2]], "something else"))
	})
	s = yamlUnknown.ReplaceAllString(s, `unknown field "$1" (known: credentials, and per entry host, header, value_env, value_file, placeholder, principals)`)
	return strings.ReplaceAll(s, "unmarshal errors:\n  ", "")
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// isToken reports whether s is an HTTP token (RFC 9110 tchar).
func isToken(s string) bool {
	for _, r := range s {
		if r > '~' || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// reservedHeaders frame the message or the connection; the proxy sets or
// strips them itself, so a credential in one would be lost or would break
// the request.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Keep-Alive": true, "Proxy-Connection": true, "Proxy-Authorization": true, "Proxy-Authenticate": true,
	"Te": true, "Trailer": true, "Upgrade": true, "Expect": true,
}

// reservedVars are variables the sandbox's programs and the egress setup
// depend on; a placeholder must not shadow them.
var reservedVars = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true, "PWD": true, "TMPDIR": true,
	"TERM": true, "LANG": true, "LANGUAGE": true, "HOSTNAME": true, "IFS": true, "ENV": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "ALL_PROXY": true, "NO_PROXY": true, "FTP_PROXY": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "REQUESTS_CA_BUNDLE": true, "CURL_CA_BUNDLE": true,
	"PIP_CERT": true, "NODE_EXTRA_CA_CERTS": true, "NODE_OPTIONS": true, "NPM_CONFIG_CAFILE": true,
	"PYTHONPATH": true, "PYTHONHOME": true, "PYTHONSTARTUP": true, "NODE_PATH": true, "GCONV_PATH": true,
}

// reservedVar reports whether name is reserved, in any case (proxy
// variables are read in both), or in a family the server sets.
func reservedVar(name string) bool {
	up := strings.ToUpper(name)
	return reservedVars[up] || strings.HasPrefix(up, "LC_") || strings.HasPrefix(up, "LD_") ||
		strings.HasPrefix(up, "CODEXEC_") || strings.HasPrefix(up, "BASH_")
}

// secret is a credential value. Every printing and logging path shows
// "[redacted]": the value exists only to be written into a request.
type secret string

const redacted = "[redacted]"

func (secret) String() string               { return redacted }
func (secret) GoString() string             { return redacted }
func (secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (secret) Format(f fmt.State, _ rune)   { _, _ = io.WriteString(f, redacted) }
func (secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }
func (secret) MarshalYAML() (any, error)    { return redacted, nil }
func (c Credential) describe() string {
	return fmt.Sprintf("credential{host %s, header %s, %s, placeholder %s, principals %v, value %s}",
		c.Host.String(), c.Header, c.source(), c.Placeholder, c.Principals, redacted)
}

// String describes c without its value.
func (c Credential) String() string { return c.describe() }

// GoString describes c without its value (for %#v).
func (c Credential) GoString() string { return c.describe() }

// Format describes c without its value, whatever the verb: fmt would
// otherwise print the unexported value field through reflection.
func (c Credential) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.describe()) }

// LogValue logs c without its value.
func (c Credential) LogValue() slog.Value {
	return slog.GroupValue(slog.String("host", c.Host.String()), slog.String("header", c.Header),
		slog.String("placeholder", c.Placeholder), slog.String("value", redacted))
}

// placeholderKey makes placeholders unguessable from outside the server
// and unrelated to the values: it is drawn once per process.
var placeholderKey = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (it crashes instead)
	return k
}()

// placeholderPrefix starts every placeholder value.
const placeholderPrefix = "codexec-placeholder-"

// placeholderValue is what the sandbox sees in c.Placeholder: the same for
// the life of the server process, 52 characters, derived from the variable
// name and a per-process key only — never from the value.
func placeholderValue(c Credential) string {
	m := hmac.New(sha256.New, placeholderKey)
	m.Write([]byte(c.Placeholder))
	return placeholderPrefix + hex.EncodeToString(m.Sum(nil)[:16])
}

// credentialStore holds the credentials of one server with their values,
// for the proxy to find the one a connection gets.
type credentialStore struct {
	creds []Credential
}

// newCredentialStore keeps creds with their values. A Credential built by
// hand (not by LoadCredentials) has its value read here, from the same
// sources and with the same checks.
func newCredentialStore(creds []Credential) (*credentialStore, error) {
	s := &credentialStore{creds: slices.Clone(creds)}
	seen := map[string]int{}
	for i := range s.creds {
		if reason := s.creds[i].ready(seen, i); reason != "" {
			return nil, &CredentialError{File: "(configuration)", Index: i, Host: s.creds[i].Host.String(), Reason: reason}
		}
	}
	return s, nil
}

// ready checks c (the i-th; seen maps placeholders to their credential)
// and reads its value unless LoadCredentials did.
func (c *Credential) ready(seen map[string]int, i int) string {
	if reason := c.checkNames(); reason != "" {
		return reason
	}
	if j, dup := seen[c.Placeholder]; dup {
		return fmt.Sprintf("placeholder %s is already used by credentials[%d]; each credential needs its own variable", c.Placeholder, j)
	}
	seen[c.Placeholder] = i
	if c.value != "" {
		return ""
	}
	v, reason := c.readValue()
	c.value = v
	return reason
}

// Format describes s without any value (fmt prints unexported fields
// through reflection, past the Credential's own Format).
func (s *credentialStore) Format(f fmt.State, _ rune) {
	if s == nil {
		_, _ = io.WriteString(f, "credentials{}")
		return
	}
	_, _ = fmt.Fprintf(f, "credentials%v", s.creds)
}

// LogValue logs s without any value.
func (s *credentialStore) LogValue() slog.Value { return slog.StringValue(fmt.Sprint(s)) }

// match returns the first credential principal may use for host:port, and
// its value. A nil store matches nothing.
func (s *credentialStore) match(principal, host string, port int) (*Credential, string, bool) {
	if s == nil {
		return nil, "", false
	}
	for i := range s.creds {
		c := &s.creds[i]
		if c.Host.matches(host, port) && (len(c.Principals) == 0 || slices.Contains(c.Principals, principal)) {
			return c, string(c.value), true
		}
	}
	return nil, "", false
}

// placeholderEnv returns "VAR=codexec-placeholder-…" for every credential
// principal may use, in file order, for a run's environment.
func (s *credentialStore) placeholderEnv(principal string) []string {
	if s == nil {
		return nil
	}
	var env []string
	for _, c := range s.creds {
		if len(c.Principals) == 0 || slices.Contains(c.Principals, principal) {
			env = append(env, c.Placeholder+"="+placeholderValue(c))
		}
	}
	return env
}
