package domain

import (
	"context"
	"io"
	"time"
)

// DocumentChunkSize is the most of one document's content a store reads,
// writes or holds at once: uploads are written and downloads served in
// chunks of this size, so memory per transfer is bounded whatever the
// file's size.
const DocumentChunkSize = 256 << 10

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
// server sharing it can serve them. A document is staged while it is
// written: it is not listed, not served and may not be named by a resume
// until the resume that uses it completes it (ResumeRequest.Documents).
type DocumentStore interface {
	// AddDocument stores d, staged, with the content it reads from
	// content, written chunk by chunk (at most DocumentChunkSize each) as
	// it is read. It returns d with Size and SHA256 set from the content.
	// An error reading content is returned wrapped, and nothing is kept.
	AddDocument(ctx context.Context, d Document, content io.Reader) (Document, error)
	// Document returns a completed document, or ErrNotFound.
	Document(ctx context.Context, id string) (Document, error)
	// CopyDocument writes a completed document's content to w, one chunk
	// at a time; ErrNotFound if there is no such document.
	CopyDocument(ctx context.Context, id string, w io.Writer) (int64, error)
	// Documents lists a suspension's completed documents, oldest first,
	// without content.
	Documents(ctx context.Context, suspensionID string) ([]Document, error)
	// DeleteDocuments removes documents whose resume did not happen.
	DeleteDocuments(ctx context.Context, ids []string) error
}
