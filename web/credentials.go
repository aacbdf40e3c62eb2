package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"

	"github.com/tollgatehq/tollgate/domain"
)

// API keys are "tg_" followed by crypto/rand.Text (26 base32 characters,
// 130 bits). Only their SHA-256 is stored: for a secret with that much
// entropy a plain hash is as strong as a slow one, and lookups stay fast.
const apiKeyPrefix = "tg_"

// NewAPIKey returns a fresh secret, its display prefix and its hash.
func NewAPIKey() (secret, prefix string, hash []byte) {
	secret = apiKeyPrefix + rand.Text()
	return secret, APIKeyPrefix(secret), HashAPIKey(secret)
}

// APIKeyPrefix is the part of a key's secret kept in the clear, so that
// people can tell keys apart: "tg_" and six characters more.
func APIKeyPrefix(secret string) string { return secret[:min(len(secret), len(apiKeyPrefix)+6)] }

// HashAPIKey is the stored form of an API key.
func HashAPIKey(secret string) []byte { return SHA256Bytes(secret) }

// SHA256Bytes is the SHA-256 of s: the stored form of the high-entropy
// secrets (API keys, session IDs, work items' receipt tokens) that are
// looked up by their hash. Reset tokens use domain.HashResetToken, the
// same hash, since the mail dispatcher issues them too.
func SHA256Bytes(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// Argon2id parameters: OWASP's first recommendation (m=19 MiB, t=2, p=1).
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
)

// HashPassword derives an argon2id hash in the PHC string format, for a
// password that keeps domain.ValidatePassword's rule (callers that know
// whose password it is check it against the email first). It is hashed
// whole; nothing is truncated.
func HashPassword(password string) (string, error) {
	if err := domain.ValidatePassword(password, ""); err != nil {
		return "", err
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// CheckPassword reports whether password matches an encoded argon2id hash,
// comparing in constant time.
func CheckPassword(encoded, password string) bool {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil {
		return false
	}
	b64 := base64.RawStdEncoding
	salt, err1 := b64.DecodeString(parts[4])
	want, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}
