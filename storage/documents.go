package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

type documentRow struct {
	bun.BaseModel `bun:"table:documents,alias:d"`

	ID            string    `bun:"id,pk"`
	SuspensionID  string    `bun:"suspension_id"`
	RunID         string    `bun:"run_id"`
	UploaderID    string    `bun:"uploader_id"`
	UploaderEmail string    `bun:"uploader_email"`
	Filename      string    `bun:"filename"`
	ContentType   string    `bun:"content_type"`
	Size          int64     `bun:"size"`
	SHA256        []byte    `bun:"sha256"`
	Data          []byte    `bun:"data"`
	CreatedAt     time.Time `bun:"created_at"`
}

func (r *documentRow) toDomain() domain.Document {
	return domain.Document{ID: r.ID, SuspensionID: r.SuspensionID, RunID: r.RunID, UploaderID: r.UploaderID, UploaderEmail: r.UploaderEmail,
		Filename: r.Filename, ContentType: r.ContentType, Size: r.Size, SHA256: r.SHA256, CreatedAt: r.CreatedAt.UTC()}
}

// AddDocuments implements domain.DocumentStore.
func (db *DB) AddDocuments(ctx context.Context, docs []domain.Document, data [][]byte) error {
	if len(docs) != len(data) {
		return errors.New("add documents: one content per document")
	}
	rows := make([]documentRow, len(docs))
	for i, d := range docs {
		rows[i] = documentRow{ID: d.ID, SuspensionID: d.SuspensionID, RunID: d.RunID, UploaderID: d.UploaderID, UploaderEmail: d.UploaderEmail,
			Filename: d.Filename, ContentType: d.ContentType, Size: d.Size, SHA256: d.SHA256, Data: data[i], CreatedAt: ts(d.CreatedAt)}
	}
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		for i := range rows {
			if _, err := tx.NewInsert().Model(&rows[i]).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add documents: %w", err)
	}
	return nil
}

// Document implements domain.DocumentStore.
func (db *DB) Document(ctx context.Context, id string) (domain.Document, []byte, error) {
	row := new(documentRow)
	if err := db.bun.NewSelect().Model(row).Where("id = ?", id).Scan(ctx); err != nil {
		return domain.Document{}, nil, fmt.Errorf("get document %s: %w", id, translate(err))
	}
	return row.toDomain(), row.Data, nil
}

// Documents implements domain.DocumentStore.
func (db *DB) Documents(ctx context.Context, suspensionID string) ([]domain.Document, error) {
	var rows []documentRow
	err := db.bun.NewSelect().Model(&rows).ExcludeColumn("data").
		Where("suspension_id = ?", suspensionID).OrderExpr("created_at, id").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list documents: %w", err)
	}
	out := make([]domain.Document, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}

// DeleteDocuments implements domain.DocumentStore.
func (db *DB) DeleteDocuments(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewDelete().Model((*documentRow)(nil)).Where("id IN (?)", bun.List(ids)).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete documents: %w", err)
	}
	return nil
}

var _ domain.DocumentStore = (*DB)(nil)
