package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/tollgatehq/tollgate/storage"
)

// minSecretLen is the shortest TOLLGATE_SECRET accepted: 32 characters,
// at least 128 bits however they are written.
const minSecretLen = 32

// loadSecret returns the secret that derives the tokens of resume URLs and
// http steps' receipts: TOLLGATE_SECRET, else the one stored in the
// database, which the first server to start makes. Every server sharing
// a database must derive the same tokens, since a call is checked against
// the stored hash of the token of the server that made the waitpoint.
//
// A data folder from before the secret moved into the database holds it
// in a file named secret: the first start stores that one, so the URLs it
// handed out keep working.
func loadSecret(ctx context.Context, db *storage.DB, dataDir string, getenv func(string) string, log *slog.Logger) ([]byte, error) {
	if s := getenv("TOLLGATE_SECRET"); s != "" {
		if len(s) < minSecretLen {
			return nil, fmt.Errorf("$TOLLGATE_SECRET must have at least %d characters", minSecretLen)
		}
		return []byte(s), nil
	}
	return db.Secret(ctx, func() ([]byte, error) {
		path := filepath.Join(dataDir, "secret")
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			raw := make([]byte, 32)
			_, _ = rand.Read(raw)
			return []byte(hex.EncodeToString(raw)), nil
		}
		if err != nil {
			return nil, err
		}
		s := strings.TrimSpace(string(b))
		if len(s) < minSecretLen {
			return nil, fmt.Errorf("%s: the secret must have at least %d characters", path, minSecretLen)
		}
		log.InfoContext(ctx, "Stored the data folder's secret in the database; the file is no longer read", "path", path)
		return []byte(s), nil
	})
}

// subKey derives a key for one purpose from the secret, so that a token
// made for one use never checks for another.
func subKey(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}
