package ui

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
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
	"github.com/tollgatehq/tollgate/web"
)

// maxUploadFiles bounds the files of one upload.
const maxUploadFiles = 20

// sniffLen is how much of a file its type is sniffed from (all that
// http.DetectContentType reads).
const sniffLen = 512

// uploadDocuments stores the files a person uploads to a suspension that
// asks for documents, then resumes it with {"documentIds": [...]} through
// the kernel. The body is streamed: each file's type is sniffed from its
// first bytes and checked against the suspension's accepted types, then
// its content goes to the store chunk by chunk as it arrives, staged. The
// resume completes the staged files in its own transaction, so they
// become visible only with it. One bad file refuses the whole upload; if
// the resume does not happen (someone else was first, the schema refuses
// it), the staged files are removed again.
func (s *pages) uploadDocuments(w http.ResponseWriter, r *http.Request) {
	sp, v, ok := s.loadSuspension(w, r)
	if !ok {
		return
	}
	if len(sp.Accept) == 0 {
		s.refuse(w, r, sp, v, "", http.StatusUnprocessableEntity, &domain.ValidationError{Message: "This suspension does not ask for documents."})
		return
	}
	if !s.mayAct(w, r, sp, v) {
		return
	}
	release, busy := s.UploadSlots().Acquire(v.ID)
	if busy != "" {
		w.Header().Set("Retry-After", strconv.Itoa(web.UploadRetryAfter))
		s.refuse(w, r, sp, v, "", http.StatusTooManyRequests, &domain.ValidationError{Message: busy})
		return
	}
	defer release()
	r.Body = http.MaxBytesReader(w, web.UploadDeadlines(w, r.Body), s.uploadRequestLimit())
	docs, err := s.storeUploads(r, sp, v)
	if err != nil {
		s.dropUploads(r, sp, docs)
		s.uploadFailed(w, r, sp, v, err)
		return
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	resumeData, _ := json.Marshal(map[string][]string{domain.DocumentIDsMember: ids})
	if err := s.resume(r, sp, v, resumeData, ids...); err != nil {
		s.dropUploads(r, sp, docs)
		s.actionFailed(w, r, sp, v, "", err)
		return
	}
	for _, d := range docs {
		s.Audit(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "document.upload", Subject: d.ID, WorkflowID: sp.WorkflowID,
			Data: web.AuditData(map[string]any{"suspensionId": sp.ID, "filename": d.Filename, "contentType": d.ContentType, "size": d.Size, "sha256": fmt.Sprintf("%x", d.SHA256)})})
	}
	http.Redirect(w, r, "/suspensions/"+sp.ID+"?done=resumed", http.StatusSeeOther)
}

// uploadFailed explains a refused upload; one that could not be read (the
// connection broke) or stored is not the person's fault.
func (s *pages) uploadFailed(w http.ResponseWriter, r *http.Request, sp domain.Suspension, v *views.Viewer, err error) {
	if ve, ok := errors.AsType[*domain.ValidationError](err); ok {
		s.refuse(w, r, sp, v, "", web.ValidationStatus(ve.Code), ve)
		return
	}
	if r.Context().Err() == nil && !isReadError(err) {
		s.UIFailure(w, r, err)
		return
	}
	s.refuse(w, r, sp, v, "", http.StatusBadRequest, &domain.ValidationError{Message: "The upload could not be read. Try again."})
}

// dropUploads removes the staged documents of an upload that did not
// resume its suspension. Should it fail, the sweep of staged documents
// removes them later.
func (s *pages) dropUploads(r *http.Request, sp domain.Suspension, docs []domain.Document) {
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
func (s *pages) storeUploads(r *http.Request, sp domain.Suspension, v *views.Viewer) ([]domain.Document, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, &domain.ValidationError{Message: "The upload could not be read. Try again."}
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
		d, err := s.storeUpload(r.Context(), part, sp, v)
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
func (s *pages) storeUpload(ctx context.Context, part *multipart.Part, sp domain.Suspension, v *views.Viewer) (domain.Document, error) {
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
	content := &cappedReader{r: io.MultiReader(bytes.NewReader(head[:n]), part), limit: s.uploadLimit(), name: shown, s: s}
	d := domain.Document{ID: uuid.Must(uuid.NewV7()).String(), SuspensionID: sp.ID, RunID: sp.RunID, UploaderID: v.ID, UploaderEmail: v.Email,
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
	s     *pages
}

func (c *cappedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	if c.read > c.limit {
		return n, &domain.ValidationError{Code: web.CodePayloadTooLarge, Message: fmt.Sprintf("%s is larger than %s, the most this server accepts per file.", c.name, humanSize(c.limit)),
			Fields: []domain.FieldError{{File: c.name, Message: "too large"}}}
	}
	if err != nil && err != io.EOF {
		return n, c.s.bodyError(err)
	}
	return n, err
}

// bodyError is a read of the request body that failed: past the request's
// limit, a refusal the person can act on; anything else as it is.
func (s *pages) bodyError(err error) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return &domain.ValidationError{Code: web.CodePayloadTooLarge, Message: fmt.Sprintf("The upload is larger than this server accepts (%s at once, %s per file).",
			humanSize(s.uploadRequestLimit()), humanSize(s.uploadLimit()))}
	}
	return readError{err}
}

// readError is a request body that could not be read: the client went
// away or sent a broken form.
type readError struct{ err error }

func (e readError) Error() string { return "read upload: " + e.err.Error() }
func (e readError) Unwrap() error { return e.err }

func isReadError(err error) bool {
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

func humanSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

func (s *pages) uploadLimit() int64 {
	if s.UploadLimit > 0 {
		return s.UploadLimit
	}
	return 20 << 20
}

func (s *pages) uploadRequestLimit() int64 {
	if s.UploadRequestLimit > 0 {
		return s.UploadRequestLimit
	}
	return 100 << 20
}

// documentViews lists a suspension's documents for its page.
func (s *pages) documentViews(r *http.Request, sp domain.Suspension) []domain.Document {
	docs, err := s.UIStore.Documents(r.Context(), sp.ID)
	if err != nil {
		s.Log.ErrorContext(r.Context(), "Listing documents failed", "suspension_id", sp.ID, "error", err)
	}
	return docs
}
