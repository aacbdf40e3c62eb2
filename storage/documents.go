package storage

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

type documentRow struct {
	bun.BaseModel `bun:"table:documents,alias:d"`

	ID            string     `bun:"id,pk"`
	SuspensionID  string     `bun:"suspension_id"`
	RunID         string     `bun:"run_id"`
	UploaderID    string     `bun:"uploader_id"`
	UploaderEmail string     `bun:"uploader_email"`
	Filename      string     `bun:"filename"`
	ContentType   string     `bun:"content_type"`
	Size          int64      `bun:"size"`
	SHA256        []byte     `bun:"sha256"`
	CreatedAt     time.Time  `bun:"created_at"`
	CompletedAt   *time.Time `bun:"completed_at"`
}

type documentChunkRow struct {
	bun.BaseModel `bun:"table:document_chunks,alias:c"`

	DocumentID string `bun:"document_id,pk"`
	Seq        int    `bun:"seq,pk"`
	Data       []byte `bun:"data"`
}

func (r *documentRow) toDomain() domain.Document {
	return domain.Document{ID: r.ID, SuspensionID: r.SuspensionID, RunID: r.RunID, UploaderID: r.UploaderID, UploaderEmail: r.UploaderEmail,
		Filename: r.Filename, ContentType: r.ContentType, Size: r.Size, SHA256: r.SHA256, CreatedAt: r.CreatedAt.UTC()}
}

// AddDocument implements domain.DocumentStore. The row is written first,
// staged, then each chunk in a statement of its own as it is read: no
// transaction stays open while a person's upload trickles in (on SQLite it
// would hold the one write lock). A failure removes what was written; a
// crash leaves a staged document that DeleteStagedDocuments sweeps.
func (db *DB) AddDocument(ctx context.Context, d domain.Document, content io.Reader) (domain.Document, error) {
	row := documentRow{ID: d.ID, SuspensionID: d.SuspensionID, RunID: d.RunID, UploaderID: d.UploaderID, UploaderEmail: d.UploaderEmail,
		Filename: d.Filename, ContentType: d.ContentType, SHA256: []byte{}, CreatedAt: ts(d.CreatedAt)}
	if _, err := db.bun.NewInsert().Model(&row).Exec(ctx); err != nil {
		return d, fmt.Errorf("add document %s: %w", d.ID, translate(err))
	}
	size, sum, err := db.writeChunks(ctx, d.ID, content)
	if err == nil {
		_, err = db.bun.NewUpdate().Model((*documentRow)(nil)).Set("size = ?", size).Set("sha256 = ?", sum).Where("id = ?", d.ID).Exec(ctx)
	}
	if err != nil {
		if derr := db.DeleteDocuments(context.WithoutCancel(ctx), []string{d.ID}); derr != nil {
			err = errors.Join(err, derr)
		}
		return d, fmt.Errorf("add document %s: %w", d.ID, err)
	}
	d.Size, d.SHA256 = size, sum
	return d, nil
}

// writeChunks stores content as the chunks of a document, hashing it as it
// goes; one chunk's buffer is all it holds.
func (db *DB) writeChunks(ctx context.Context, id string, content io.Reader) (int64, []byte, error) {
	buf := make([]byte, domain.DocumentChunkSize)
	h := sha256.New()
	var size int64
	for seq := 0; ; seq++ {
		n, err := io.ReadFull(content, buf)
		if n > 0 {
			h.Write(buf[:n])
			size += int64(n)
			if _, err := db.bun.NewInsert().Model(&documentChunkRow{DocumentID: id, Seq: seq, Data: buf[:n]}).Exec(ctx); err != nil {
				return size, nil, translate(err)
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return size, h.Sum(nil), nil
		}
		if err != nil {
			return size, nil, err
		}
	}
}

// Document implements domain.DocumentStore.
func (db *DB) Document(ctx context.Context, id string) (domain.Document, error) {
	row := new(documentRow)
	if err := db.bun.NewSelect().Model(row).Where("id = ? AND completed_at IS NOT NULL", id).Scan(ctx); err != nil {
		return domain.Document{}, fmt.Errorf("get document %s: %w", id, translate(err))
	}
	return row.toDomain(), nil
}

// CopyDocument implements domain.DocumentStore. Each chunk is read by its
// own statement, so that a slow reader holds neither a transaction nor a
// cursor open.
func (db *DB) CopyDocument(ctx context.Context, id string, w io.Writer) (int64, error) {
	var written int64
	for seq := -1; ; {
		chunk := new(documentChunkRow)
		err := db.bun.NewSelect().Model(chunk).
			Where("c.document_id = ? AND c.seq > ?", id, seq).
			Where("EXISTS (SELECT 1 FROM documents d WHERE d.id = c.document_id AND d.completed_at IS NOT NULL)").
			OrderExpr("c.seq").Limit(1).Scan(ctx)
		if isNoRows(err) {
			if seq < 0 {
				if _, err := db.Document(ctx, id); err != nil {
					return 0, err
				}
			}
			return written, nil
		}
		if err != nil {
			return written, fmt.Errorf("copy document %s: %w", id, translate(err))
		}
		n, err := w.Write(chunk.Data)
		written += int64(n)
		if err != nil {
			return written, fmt.Errorf("copy document %s: %w", id, err)
		}
		seq = chunk.Seq
	}
}

// Documents implements domain.DocumentStore.
func (db *DB) Documents(ctx context.Context, suspensionID string) ([]domain.Document, error) {
	var rows []documentRow
	err := db.bun.NewSelect().Model(&rows).
		Where("suspension_id = ? AND completed_at IS NOT NULL", suspensionID).OrderExpr("created_at, id").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list documents: %w", err)
	}
	out := make([]domain.Document, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}

// UploadedDocuments implements domain.Store.
func (db *DB) UploadedDocuments(ctx context.Context, suspensionID string, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []string
	err := db.bun.NewSelect().Model((*documentRow)(nil)).Column("id").
		Where("suspension_id = ? AND completed_at IS NOT NULL AND id IN (?)", suspensionID, bun.List(ids)).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("uploaded documents of suspension %s: %w", suspensionID, err)
	}
	return out, nil
}

// completeDocuments makes a winning resume's staged documents visible, in
// its transaction. Each must be a staged document of the suspension.
func (db *DB) completeDocuments(ctx context.Context, tx bun.IDB, suspensionID string, ids []string, now time.Time) error {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if len(ids) == 0 {
		return nil
	}
	res, err := tx.NewUpdate().Model((*documentRow)(nil)).Set("completed_at = ?", now).
		Where("suspension_id = ? AND completed_at IS NULL AND id IN (?)", suspensionID, bun.List(ids)).Exec(ctx)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != int64(len(ids)) {
		return &domain.ValidationError{Code: domain.CodeUnknownDocument, Message: "The upload's documents are no longer there. Upload them again."}
	}
	return nil
}

// DeleteDocuments implements domain.DocumentStore. Their chunks go with
// them (ON DELETE CASCADE).
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

// DeleteStagedDocuments removes at most limit documents staged before the
// given time — uploads that never finished: a crash, a lost connection —
// with their chunks, and returns how many it removed.
func (db *DB) DeleteStagedDocuments(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int64
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		staged := tx.NewSelect().Model((*documentRow)(nil)).Column("id").
			Where("completed_at IS NULL AND created_at < ?", ts(before)).OrderExpr("created_at").Limit(int64(limit))
		res, err := tx.NewDelete().Model((*documentRow)(nil)).Where("id IN (?)", staged).Exec(ctx)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete staged documents: %w", err)
	}
	return int(n), nil
}

var _ domain.DocumentStore = (*DB)(nil)
