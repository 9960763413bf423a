package checkpoint

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
)

// Sealer encrypts checkpoints at rest with AES-256-GCM. A nil *Sealer
// leaves them plain (Seal returns its input, Open accepts only plain
// checkpoints). Safe for concurrent use.
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer returns a Sealer for a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("checkpoint key: %d bytes, want 32", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal returns plain encrypted and authenticated together with aad (which
// names whose checkpoint it is); a nil Sealer returns plain.
func (s *Sealer) Seal(plain, aad []byte) []byte {
	if s == nil {
		return plain
	}
	out := make([]byte, len(SealedMagic)+s.aead.NonceSize(), len(SealedMagic)+s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	copy(out, SealedMagic)
	nonce := out[len(SealedMagic):]
	_, _ = rand.Read(nonce)
	return s.aead.Seal(out, nonce, plain, aad)
}

// Open returns the plain checkpoint of b. A sealed b needs a Sealer with
// its key and the same aad; a plain b is refused when s is set (a blob
// replaced by an unsealed one must not be trusted) and accepted when not.
func (s *Sealer) Open(b, aad []byte) ([]byte, error) {
	sealed := bytes.HasPrefix(b, []byte(SealedMagic))
	switch {
	case s == nil && sealed:
		return nil, fmt.Errorf("%w: it is encrypted and no CODEXEC_CHECKPOINT_KEY is set", ErrCorrupt)
	case s == nil:
		return b, nil
	case !sealed:
		return nil, fmt.Errorf("%w: it is not encrypted, but CODEXEC_CHECKPOINT_KEY is set", ErrCorrupt)
	}
	ns := s.aead.NonceSize()
	if len(b) < len(SealedMagic)+ns {
		return nil, fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	nonce := b[len(SealedMagic) : len(SealedMagic)+ns]
	plain, err := s.aead.Open(nil, nonce, b[len(SealedMagic)+ns:], aad)
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed (another key, another session's blob, or altered bytes)", ErrCorrupt)
	}
	return plain, nil
}

// AAD is the associated data binding a sealed checkpoint to its owner,
// session and checkpoint id.
func AAD(owner, session, id string) []byte {
	return []byte("codexec-checkpoint\x00" + owner + "\x00" + session + "\x00" + id)
}
