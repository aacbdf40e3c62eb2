package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// minSecretLen is the shortest TOLLGATE_SECRET accepted: 32 characters,
// at least 128 bits however they are written.
const minSecretLen = 32

// loadSecret returns the server's secret, which derives the tokens of the
// resume URLs it hands out: TOLLGATE_SECRET, else the one kept in the data
// folder (made on first start, readable by this user only). Servers that
// share a PostgreSQL database must share TOLLGATE_SECRET, or the resume URL
// one shows for a suspension differs from another's (each URL still
// works: a call is checked against the stored hash of its token).
func loadSecret(dataDir string, getenv func(string) string, shared bool, log *slog.Logger) ([]byte, error) {
	if s := getenv("TOLLGATE_SECRET"); s != "" {
		if len(s) < minSecretLen {
			return nil, fmt.Errorf("$TOLLGATE_SECRET must have at least %d characters", minSecretLen)
		}
		return []byte(s), nil
	}
	path := filepath.Join(dataDir, "secret")
	if shared {
		log.Warn("TOLLGATE_SECRET is not set: this server keeps its own secret in the data folder; give every server sharing the database the same TOLLGATE_SECRET so they show the same resume URLs", "path", path)
	}
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		s := strings.TrimSpace(string(b))
		if len(s) < minSecretLen {
			return nil, fmt.Errorf("%s: the secret must have at least %d characters", path, minSecretLen)
		}
		return []byte(s), nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	secret := hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another process made it first
		return loadSecret(dataDir, getenv, false, log)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return []byte(secret), nil
}
