package approval

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MinKeyBytes is the shortest signing key accepted.
const MinKeyBytes = 32

// Binding is what a request state is bound to: who asked, which tool, the
// exact arguments, and anything else the person was shown that the
// arguments only name (run_script's saved code). The answer counts only
// for a call with the same binding.
type Binding struct {
	Principal string
	Tool      string
	Args      json.RawMessage
	Shown     string
}

// Signer issues and redeems request states: an HMAC-SHA256 over a hash of
// the Binding, an expiry and a nonce. A state is redeemed once (per
// process: the nonces used are kept until they expire). Safe for
// concurrent use.
type Signer struct {
	key []byte
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	used map[string]time.Time // nonce → expiry, pruned as they expire
}

// NewSigner returns a signer with key (MinKeyBytes or more) whose states
// expire ttl after they are issued (the approval timeout).
func NewSigner(key []byte, ttl time.Duration) (*Signer, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("the approval signing key must be at least %d bytes, got %d", MinKeyBytes, len(key))
	}
	if ttl <= 0 {
		return nil, errors.New("the approval timeout must be positive")
	}
	return &Signer{key: bytes.Clone(key), ttl: ttl, now: time.Now, used: map[string]time.Time{}}, nil
}

// NewKey returns a random key (one process's own, when the operator gives
// none).
func NewKey() ([]byte, error) {
	k := make([]byte, MinKeyBytes)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	return k, nil
}

// LoadKey reads a key file (CODEXEC_APPROVAL_KEY_FILE): its contents,
// surrounding blanks trimmed, at least MinKeyBytes long.
func LoadKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k := bytes.TrimSpace(b)
	if len(k) < MinKeyBytes {
		return nil, fmt.Errorf("%s holds %d bytes; a key needs at least %d (for example: head -c 48 /dev/urandom | base64 > %s)", path, len(k), MinKeyBytes, path)
	}
	return k, nil
}

const statePrefix = "v1."

type statePayload struct {
	Bind    string `json:"b"`
	Expires int64  `json:"e"`
	Nonce   string `json:"n"`
}

// Issue returns a state bound to b, valid for the signer's ttl.
func (s *Signer) Issue(b Binding) (string, error) {
	h, err := b.hash()
	if err != nil {
		return "", err
	}
	n := make([]byte, 16)
	if _, err := rand.Read(n); err != nil {
		return "", err
	}
	p, err := json.Marshal(statePayload{Bind: h, Expires: s.now().Add(s.ttl).UnixMilli(), Nonce: hex.EncodeToString(n)})
	if err != nil {
		return "", err
	}
	body := base64.RawURLEncoding.EncodeToString(p)
	return statePrefix + body + "." + base64.RawURLEncoding.EncodeToString(s.mac(body)), nil
}

func (s *Signer) mac(body string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("codexec approval state\n" + body))
	return m.Sum(nil)
}

// Redeem checks that state was issued by this key for b, has not expired
// and was not redeemed before, and marks it redeemed. Its errors are
// *Refusal: TimedOut for an expired state, Refused for the rest.
func (s *Signer) Redeem(state string, b Binding) error {
	p, err := s.open(state)
	if err != nil {
		return err
	}
	h, err := b.hash()
	if err != nil {
		return refusal(Refused, "the call's arguments cannot be read: %v", err)
	}
	if !hmac.Equal([]byte(h), []byte(p.Bind)) {
		return refusal(Refused, "the approval answered a different call (another principal, tool or arguments): an approved call must be sent again exactly as it was asked about; nothing ran")
	}
	now := s.now()
	if now.UnixMilli() > p.Expires {
		return refusal(TimedOut, "the approval was not answered within %v; nothing ran. Call again to be asked again", s.ttl)
	}
	return s.spend(p.Nonce, time.UnixMilli(p.Expires), now)
}

// open verifies state's signature and decodes it.
func (s *Signer) open(state string) (statePayload, error) {
	forged := refusal(Refused, "the approval's request state is not one this server issued (altered or forged); nothing ran. Call again without it to be asked")
	rest, ok := strings.CutPrefix(state, statePrefix)
	body, sig, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 {
		return statePayload{}, forged
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(body)) {
		return statePayload{}, forged
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	var p statePayload
	if err != nil || json.Unmarshal(raw, &p) != nil || p.Nonce == "" {
		return statePayload{}, forged
	}
	return p, nil
}

// spend marks nonce used until expires; a nonce already used is a replay.
func (s *Signer) spend(nonce string, expires, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n, e := range s.used {
		if now.After(e) {
			delete(s.used, n)
		}
	}
	if _, ok := s.used[nonce]; ok {
		return refusal(Refused, "this approval was already used for a call: each approval lets one call run once; nothing ran. Call again to be asked again")
	}
	s.used[nonce] = expires
	return nil
}

// hash is a hash of the binding, with the arguments in canonical JSON
// (keys sorted, numbers as sent) so a re-encoding of the same arguments
// matches and any change does not.
func (b Binding) hash() (string, error) {
	args, err := canonical(b.Args)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(b.Principal), []byte(b.Tool), args, []byte(b.Shown)} {
		h.Write([]byte(strconv.Itoa(len(part)) + ":"))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func canonical(raw json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []byte("null"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}
