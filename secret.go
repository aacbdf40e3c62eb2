package tollgate

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

// loadSecret returns the secret that derives the tokens of resume URLs and
// http steps' receipts: configured (TOLLGATE_SECRET for serve), else the
// one stored in the database, which the first server to start makes. Every server sharing
// a database must derive the same tokens, since a call is checked against
// the stored hash of the token of the server that made the waitpoint.
//
// A data folder from before the secret moved into the database holds it
// in a file named secret: the first start stores that one, so the URLs it
// handed out keep working.
func loadSecret(ctx context.Context, db *storage.DB, dataDir, configured string, log *slog.Logger) ([]byte, error) {
	if configured != "" {
		return []byte(configured), nil // its length is checked with the rest of the Config
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
