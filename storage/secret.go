package storage

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// Secret returns the secret that every server on this database derives its
// tokens from. The first call on a database stores what fresh returns;
// every later call, from this process or another, returns that stored
// value, so servers sharing a database agree without configuration. fresh
// is called only while no secret is stored.
func (db *DB) Secret(ctx context.Context, fresh func() ([]byte, error)) ([]byte, error) {
	var secret []byte
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		err := tx.NewRaw("SELECT secret FROM server_secret WHERE id = 1").Scan(ctx, &secret)
		if !isNoRows(err) {
			return err
		}
		s, err := fresh()
		if err != nil {
			return err
		}
		// Another server may have stored one since the SELECT: its row
		// stands, and the SELECT below reads it.
		if _, err := tx.NewRaw("INSERT INTO server_secret (id, secret) VALUES (1, ?) ON CONFLICT (id) DO NOTHING", s).Exec(ctx); err != nil {
			return err
		}
		return tx.NewRaw("SELECT secret FROM server_secret WHERE id = 1").Scan(ctx, &secret)
	})
	if err != nil {
		return nil, fmt.Errorf("read the server secret: %w", err)
	}
	return secret, nil
}
