// Package authn authenticates remote callers of the HTTP transport. It turns
// a bearer token into a principal name, either from an operator's token file
// (TokenFile) or from a JWT access token signed by a configured OAuth 2.1
// authorization server (JWT), and offers both as one go-sdk
// auth.TokenVerifier whose TokenInfo.UserID is the principal.
//
// The principal is the only identity the rest of codexec trusts; it is never
// taken from tool input. Every type here is safe for concurrent use.
package authn

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// MinTokenLen is the shortest plaintext token accepted in a token file; a
// shorter one is guessable and refused at load.
const MinTokenLen = 16

// reloadEvery bounds how often Lookup looks at the file for changes.
const reloadEvery = time.Second

// TokenFile maps bearer tokens to principals. The file has one entry per
// line, "TOKEN PRINCIPAL" or "sha256:HEX PRINCIPAL" (the hex SHA-256 of the
// token, so the file need not hold secrets); blank lines and lines starting
// with # are ignored. Only hashes are kept in memory. The file is re-read
// when its size or modification time changes; a file that fails to parse
// keeps the previous table (and is logged), so a typo cannot lock everyone
// out or in.
type TokenFile struct {
	path string

	mu      sync.Mutex
	table   map[[32]byte]string
	stamp   fileStamp
	checked time.Time
}

type fileStamp struct {
	size  int64
	mtime time.Time
}

// LoadTokenFile reads path; errors name the offending line.
func LoadTokenFile(path string) (*TokenFile, error) {
	f := &TokenFile{path: path}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("CODEXEC_AUTH_TOKENS: %w", err)
	}
	if err := f.load(stampOf(st)); err != nil {
		return nil, err
	}
	return f, nil
}

func stampOf(st os.FileInfo) fileStamp { return fileStamp{st.Size(), st.ModTime()} }

// Lookup returns the principal of token, reloading the file first if it
// changed (checked at most once a second).
func (f *TokenFile) Lookup(token string) (string, bool) {
	sum := sha256.Sum256([]byte(token))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.maybeReload()
	p, ok := f.table[sum]
	return p, ok
}

// Len is the number of tokens loaded.
func (f *TokenFile) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.table)
}

// maybeReload re-reads the file when its stamp changed; f.mu is held.
func (f *TokenFile) maybeReload() {
	if time.Since(f.checked) < reloadEvery {
		return
	}
	f.checked = time.Now()
	st, err := os.Stat(f.path)
	if err != nil {
		slog.Error("auth token file unreadable; keeping the loaded tokens", "path", f.path, "err", err)
		return
	}
	if stampOf(st) == f.stamp {
		return
	}
	if err := f.load(stampOf(st)); err != nil {
		slog.Error("auth token file invalid; keeping the loaded tokens", "err", err)
		return
	}
	slog.Info("auth token file reloaded", "path", f.path, "tokens", len(f.table))
}

// load parses the file into a fresh table and installs it with stamp.
func (f *TokenFile) load(stamp fileStamp) error {
	b, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("CODEXEC_AUTH_TOKENS: %w", err)
	}
	table, err := ParseTokens(b)
	if err != nil {
		return fmt.Errorf("CODEXEC_AUTH_TOKENS %s: %w", f.path, err)
	}
	f.table, f.stamp, f.checked = table, stamp, time.Now()
	return nil
}

// ParseTokens parses token file content into SHA-256 → principal.
func ParseTokens(b []byte) (map[[32]byte]string, error) {
	table := map[[32]byte]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, principal, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, dup := table[sum]; dup {
			return nil, fmt.Errorf("line %d: token listed twice", n)
		}
		table[sum] = principal
	}
	if len(table) == 0 {
		return nil, errors.New("no tokens")
	}
	return table, sc.Err()
}

func parseLine(line string) ([32]byte, string, error) {
	var sum [32]byte
	fields := strings.Fields(line)
	if len(fields) != 2 {
		return sum, "", errors.New(`want "TOKEN PRINCIPAL" or "sha256:HEX PRINCIPAL"`)
	}
	tok, principal := fields[0], fields[1]
	if hexSum, ok := strings.CutPrefix(tok, "sha256:"); ok {
		raw, err := hex.DecodeString(hexSum)
		if err != nil || len(raw) != len(sum) {
			return sum, "", errors.New("sha256: wants 64 hex digits")
		}
		copy(sum[:], raw)
		return sum, principal, nil
	}
	if len(tok) < MinTokenLen {
		return sum, "", fmt.Errorf("token shorter than %d characters", MinTokenLen)
	}
	return sha256.Sum256([]byte(tok)), principal, nil
}
