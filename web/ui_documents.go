package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/tollgatehq/tollgate/domain"
)

// maxUploadFiles bounds the files of one upload.
const maxUploadFiles = 20

// uploadDocuments stores the files a person uploads to a suspension that
// asks for documents, then resumes it with {"documentIds": [...]} through
// the kernel. Each file is bounded (UploadLimit), its type sniffed from its
// bytes and checked against the suspension's accepted types; one bad file
// refuses the whole upload and nothing is stored. If the resume does not
// happen (someone else was first, the schema refuses it), the documents are
// removed again.
func (s *Server) uploadDocuments(w http.ResponseWriter, r *http.Request) {
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
	r.Body = http.MaxBytesReader(w, r.Body, s.uploadLimit()*maxUploadFiles+1<<20)
	files, err := s.readUploads(r, sp.Accept)
	var ve *domain.ValidationError
	if errors.As(err, &ve) {
		s.refuse(w, r, sp, v, "", validationStatus(ve.Code), ve)
		return
	}
	if err != nil {
		s.refuse(w, r, sp, v, "", http.StatusBadRequest, &domain.ValidationError{Message: "The upload could not be read. Try again."})
		return
	}
	now := s.Clock.Now()
	docs := make([]domain.Document, len(files))
	data := make([][]byte, len(files))
	ids := make([]string, len(files))
	for i, f := range files {
		sum := sha256.Sum256(f.data)
		ids[i] = uuid.Must(uuid.NewV7()).String()
		docs[i] = domain.Document{ID: ids[i], SuspensionID: sp.ID, RunID: sp.RunID, UploaderID: v.ID, UploaderEmail: v.Email,
			Filename: f.name, ContentType: f.contentType, Size: int64(len(f.data)), SHA256: sum[:], CreatedAt: now}
		data[i] = f.data
	}
	if err := s.UIStore.AddDocuments(r.Context(), docs, data); err != nil {
		s.uiFailure(w, r, err)
		return
	}
	resumeData, _ := json.Marshal(map[string][]string{"documentIds": ids})
	if err := s.resume(r, sp, v, resumeData); err != nil {
		if derr := s.UIStore.DeleteDocuments(r.Context(), ids); derr != nil {
			s.Log.ErrorContext(r.Context(), "Removing the documents of a failed resume failed", "suspension_id", sp.ID, "error", derr)
		}
		s.actionFailed(w, r, sp, v, "", err)
		return
	}
	for _, d := range docs {
		s.audit(r, domain.AuditEntry{ActorID: v.ID, ActorEmail: v.Email, Action: "document.upload", Subject: d.ID, WorkflowID: sp.WorkflowID,
			Data: auditData(map[string]any{"suspensionId": sp.ID, "filename": d.Filename, "contentType": d.ContentType, "size": d.Size, "sha256": fmt.Sprintf("%x", d.SHA256)})})
	}
	http.Redirect(w, r, "/suspensions/"+sp.ID+"?done=resumed", http.StatusSeeOther)
}

type upload struct {
	name, contentType string
	data              []byte
}

// readUploads streams the multipart body, one file at a time, never holding
// more than the limit (plus one byte, to notice a larger file) of any.
func (s *Server) readUploads(r *http.Request, accept []string) ([]upload, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, err
	}
	limit := s.uploadLimit()
	var out []upload
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, &domain.ValidationError{Code: CodePayloadTooLarge, Message: fmt.Sprintf("The upload is larger than this server accepts (%d files of %s at most).", maxUploadFiles, humanSize(limit))}
			}
			return nil, err
		}
		if part.FormName() != "files" || part.FileName() == "" {
			part.Close()
			continue
		}
		if len(out) == maxUploadFiles {
			return nil, &domain.ValidationError{Message: fmt.Sprintf("Upload at most %d files at once.", maxUploadFiles)}
		}
		f, err := readPart(part, limit, accept)
		part.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, &domain.ValidationError{Message: "Choose at least one file to upload."}
	}
	return out, nil
}

func readPart(part *multipart.Part, limit int64, accept []string) (upload, error) {
	name := cleanFilename(part.FileName())
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(part, limit+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return upload{}, &domain.ValidationError{Code: CodePayloadTooLarge, Message: fmt.Sprintf("The upload is larger than this server accepts (%s per file).", humanSize(limit))}
		}
		return upload{}, err
	}
	if n > limit {
		return upload{}, &domain.ValidationError{Code: CodePayloadTooLarge, Message: fmt.Sprintf("%s is larger than %s, the most this server accepts per file.", name, humanSize(limit)),
			Fields: []domain.FieldError{{Field: name, Message: "too large"}}}
	}
	if n == 0 {
		return upload{}, &domain.ValidationError{Message: name + " is empty.", Fields: []domain.FieldError{{Field: name, Message: "empty"}}}
	}
	ct := sniff(buf.Bytes())
	if !accepted(ct, accept) {
		return upload{}, &domain.ValidationError{
			Message: fmt.Sprintf("%s is %s, which this request does not accept.", name, ct),
			Fields:  []domain.FieldError{{Field: name, Message: "accepted types: " + strings.Join(accept, ", ")}},
		}
	}
	return upload{name: name, contentType: ct, data: buf.Bytes()}, nil
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

// cleanFilename keeps the base name, as valid UTF-8 without control
// characters, at most 255 bytes.
func cleanFilename(name string) string {
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	name = strings.ToValidUTF8(name, "_")
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, name)
	for len(name) > 255 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	if name == "" || name == "." || name == "/" {
		return "document"
	}
	return name
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

func (s *Server) uploadLimit() int64 {
	if s.UploadLimit > 0 {
		return s.UploadLimit
	}
	return 20 << 20
}

// downloadDocument serves a document to whoever may see its suspension, as
// an attachment of its sniffed type: never rendered as a page of this site.
func (s *Server) downloadDocument(w http.ResponseWriter, r *http.Request) {
	v := s.viewerOf(r)
	notFound := func() {
		s.renderError(w, r, http.StatusNotFound, "Document not found", "There is no document here that you can see.", v)
	}
	d, data, err := s.UIStore.Document(r.Context(), r.PathValue("id"))
	if errors.Is(err, domain.ErrNotFound) {
		notFound()
		return
	}
	if err != nil {
		s.uiFailure(w, r, err)
		return
	}
	if _, err := s.visibleSuspension(r, viewerPrincipal(v), d.SuspensionID); err != nil {
		notFound()
		return
	}
	h := w.Header()
	h.Set("Content-Type", d.ContentType)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(d.Filename))
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Cache-Control", "private, no-store")
	_, _ = w.Write(data)
}

// documentViews lists a suspension's documents for its page.
func (s *Server) documentViews(r *http.Request, sp domain.Suspension) []domain.Document {
	docs, err := s.UIStore.Documents(r.Context(), sp.ID)
	if err != nil {
		s.Log.ErrorContext(r.Context(), "Listing documents failed", "suspension_id", sp.ID, "error", err)
	}
	return docs
}
