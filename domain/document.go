package domain

import (
	"context"
	"time"
)

// Document is a file a person uploaded to resume a suspension. Its content
// type was sniffed from its bytes; SHA256 identifies the content.
type Document struct {
	ID            string
	SuspensionID  string
	RunID         string
	UploaderID    string
	UploaderEmail string
	Filename      string
	ContentType   string
	Size          int64
	SHA256        []byte
	CreatedAt     time.Time
}

// DocumentStore keeps uploaded documents in the database, so that every
// server sharing it can serve them.
type DocumentStore interface {
	// AddDocuments stores documents with their content, all or none.
	AddDocuments(ctx context.Context, docs []Document, data [][]byte) error
	// Document returns a document and its content, or ErrNotFound.
	Document(ctx context.Context, id string) (Document, []byte, error)
	// Documents lists a suspension's documents, oldest first, without
	// content.
	Documents(ctx context.Context, suspensionID string) ([]Document, error)
	// DeleteDocuments removes documents whose resume did not happen.
	DeleteDocuments(ctx context.Context, ids []string) error
}
