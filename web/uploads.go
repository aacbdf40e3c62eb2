package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// maxUploadFiles bounds the files of one upload.
const maxUploadFiles = 20

// sniffLen is how much of a file its type is sniffed from (all that
// http.DetectContentType reads).
const sniffLen = 512

// CodeTooManyUploads is an upload refused while its person, or the
// server, has as many in flight as it reads at once (HTTP 429, with a
// Retry-After).
const CodeTooManyUploads = "too_many_uploads"

// CodeUploadUnreadable is an upload whose body could not be read: the
// connection broke, or the form is not multipart (HTTP 400).
const CodeUploadUnreadable = "upload_unreadable"

// TooManyUploadsError refuses an upload over its person's or the server's
// cap; its message says which, for the person.
type TooManyUploadsError struct{ Message string }

func (e *TooManyUploadsError) Error() string { return e.Message }

// RetryAfterSeconds is the refusal's Retry-After.
func (e *TooManyUploadsError) RetryAfterSeconds() int { return UploadRetryAfter }

// UploadError is an upload that failed before its suspension was resumed:
// a file refused, too large, or a body that could not be read. Err says
// which.
type UploadError struct{ Err error }

func (e *UploadError) Error() string { return "upload: " + e.Err.Error() }
func (e *UploadError) Unwrap() error { return e.Err }

// Resumer resumes an upload's suspension with data ({"documentIds": ids}),
// as its caller does (the page, the API), with its audit entry.
type Resumer func(data json.RawMessage, ids []string) (domain.Suspension, error)

// UploadDocuments stores the files by uploads in r's multipart body (its
// "files" parts) to sp, which must ask for documents, then resumes sp with
// {"documentIds": [...]} through resume. The body is streamed: each file's
// type is sniffed from its first bytes and checked against the
// suspension's accepted types, then its content goes to the store chunk
// by chunk as it arrives, staged. The resume completes the staged files in
// its own transaction, so they become visible only with it. One bad file
// refuses the whole upload; if the resume does not happen (someone else
// was first, the schema refuses it), the staged files are removed again.
// Each upload holds one of the person's and the server's upload slots
// (UploadsPerUser, UploadsInFlight) while it is read.
//
// An error before the resume is an *UploadError; one of the resume is as
// resume returned it.
func (s *Server) UploadDocuments(w http.ResponseWriter, r *http.Request, sp domain.Suspension, by domain.User, resume Resumer) (domain.Suspension, []domain.Document, error) {
	if len(sp.Accept) == 0 {
		return sp, nil, &UploadError{&domain.ValidationError{Message: "This suspension does not ask for documents."}}
	}
	release, busy := s.UploadSlots().Acquire(by.ID)
	if busy != "" {
		return sp, nil, &UploadError{&TooManyUploadsError{busy}}
	}
	defer release()
	r.Body = http.MaxBytesReader(w, UploadDeadlines(w, r.Body), s.uploadRequestLimit())
	docs, err := s.storeUploads(r, sp, by)
	if err != nil {
		s.dropUploads(r, sp, docs)
		return sp, nil, &UploadError{err}
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	data, _ := json.Marshal(map[string][]string{domain.DocumentIDsMember: ids})
	out, err := resume(data, ids)
	if err != nil {
		s.dropUploads(r, sp, docs)
		return sp, nil, err
	}
	for _, d := range docs {
		s.Audit(r, domain.AuditEntry{ActorID: by.ID, ActorEmail: by.Email, Action: "document.upload", Subject: d.ID, WorkflowID: sp.WorkflowID,
			Data: AuditData(map[string]any{"suspensionId": sp.ID, "filename": d.Filename, "contentType": d.ContentType, "size": d.Size, "sha256": fmt.Sprintf("%x", d.SHA256)})})
	}
	return out, docs, nil
}

// dropUploads removes the staged documents of an upload that did not
// resume its suspension. Should it fail, the sweep of staged documents
// removes them later.
func (s *Server) dropUploads(r *http.Request, sp domain.Suspension, docs []domain.Document) {
	if len(docs) == 0 {
		return
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	if err := s.UIStore.DeleteDocuments(context.WithoutCancel(r.Context()), ids); err != nil {
		s.Log.ErrorContext(r.Context(), "Removing the documents of a failed upload failed", "suspension_id", sp.ID, "error", err)
	}
}

// storeUploads reads the multipart body part by part and stores each file
// as it streams in, staged. It returns the documents stored so far, also
// on error, for the caller to remove.
func (s *Server) storeUploads(r *http.Request, sp domain.Suspension, by domain.User) ([]domain.Document, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, readError{err}
	}
	var docs []domain.Document
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return docs, s.bodyError(err)
		}
		if part.FormName() != "files" || part.FileName() == "" {
			part.Close()
			continue
		}
		if len(docs) == maxUploadFiles {
			part.Close()
			return docs, &domain.ValidationError{Message: fmt.Sprintf("Upload at most %d files at once.", maxUploadFiles)}
		}
		d, err := s.storeUpload(r.Context(), part, sp, by)
		part.Close()
		if err != nil {
			return docs, err
		}
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		return nil, &domain.ValidationError{Message: "Choose at least one file to upload."}
	}
	return docs, nil
}

// storeUpload sniffs one file's type from its first bytes, refuses it if
// the suspension does not accept that type, and otherwise hands the store
// a reader of the whole file (those bytes, then the rest of the part) that
// fails once it passes UploadLimit.
func (s *Server) storeUpload(ctx context.Context, part *multipart.Part, sp domain.Suspension, by domain.User) (domain.Document, error) {
	shown := domain.CleanFilename(part.FileName(), "")
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(part, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return domain.Document{}, s.bodyError(err)
	}
	if n == 0 {
		return domain.Document{}, &domain.ValidationError{Message: shown + " is empty.", Fields: []domain.FieldError{{File: shown, Message: "empty"}}}
	}
	ct := sniff(head[:n])
	if !accepted(ct, sp.Accept) {
		return domain.Document{}, &domain.ValidationError{
			Message: fmt.Sprintf("%s is not %s, so it cannot be sent here.", shown, views.WithArticle(views.FileTypes(sp.Accept))),
			Fields:  []domain.FieldError{{File: shown, Message: "accepted types: " + strings.Join(sp.Accept, ", ")}},
		}
	}
	content := &cappedReader{r: io.MultiReader(bytes.NewReader(head[:n]), part), limit: s.FileLimit(), name: shown, s: s}
	d := domain.Document{ID: uuid.Must(uuid.NewV7()).String(), SuspensionID: sp.ID, RunID: sp.RunID, UploaderID: by.ID, UploaderEmail: by.Email,
		Filename: domain.CleanFilename(part.FileName(), ct), ContentType: ct, CreatedAt: s.Clock.Now()}
	return s.UIStore.AddDocument(ctx, d, content)
}

// cappedReader reads one file of an upload, failing with a
// *domain.ValidationError once it passes the per-file limit, or when the
// request passes its own.
type cappedReader struct {
	r     io.Reader
	read  int64
	limit int64
	name  string
	s     *Server
}

func (c *cappedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	if c.read > c.limit {
		return n, &domain.ValidationError{Code: CodePayloadTooLarge, Message: fmt.Sprintf("%s is larger than %s, the most this server accepts per file.", c.name, views.Size(c.limit)),
			Fields: []domain.FieldError{{File: c.name, Message: "too large"}}}
	}
	if err != nil && err != io.EOF {
		return n, c.s.bodyError(err)
	}
	return n, err
}

// bodyError is a read of the request body that failed: past the request's
// limit, a refusal the person can act on; anything else as it is.
func (s *Server) bodyError(err error) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return &domain.ValidationError{Code: CodePayloadTooLarge, Message: fmt.Sprintf("The upload is larger than this server accepts (%s at once, %s per file).",
			views.Size(s.uploadRequestLimit()), views.Size(s.FileLimit()))}
	}
	return readError{err}
}

// readError is a request body that could not be read: the client went
// away or sent a broken form.
type readError struct{ err error }

func (e readError) Error() string { return "read upload: " + e.err.Error() }
func (e readError) Unwrap() error { return e.err }

// IsReadError says whether err is an upload whose body could not be read.
func IsReadError(err error) bool {
	_, ok := errors.AsType[readError](err)
	return ok
}

// sniff is the content type the bytes show (what the browser claimed is
// ignored), without parameters.
func sniff(b []byte) string {
	mt, _, err := mime.ParseMediaType(http.DetectContentType(b))
	if err != nil {
		return "application/octet-stream"
	}
	return mt
}

// accepted matches a type against a list that may hold "type/*".
func accepted(ct string, accept []string) bool {
	for _, a := range accept {
		if a == ct || (strings.HasSuffix(a, "/*") && strings.HasPrefix(ct, strings.TrimSuffix(a, "*"))) {
			return true
		}
	}
	return false
}

// FileLimit is the most one uploaded file may hold: UploadLimit, 20 MiB
// by default.
func (s *Server) FileLimit() int64 {
	if s.UploadLimit > 0 {
		return s.UploadLimit
	}
	return 20 << 20
}

func (s *Server) uploadRequestLimit() int64 {
	if s.UploadRequestLimit > 0 {
		return s.UploadRequestLimit
	}
	return 100 << 20
}
