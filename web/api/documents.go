package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// documentJSON is an uploaded document as the API shows it.
type documentJSON struct {
	ID          string    `json:"id"`
	Filename    string    `json:"filename"`
	ContentType string    `json:"contentType"`
	Size        int64     `json:"size"`
	SHA256      string    `json:"sha256"`
	UploadedBy  string    `json:"uploadedBy"`
	CreatedAt   time.Time `json:"createdAt"`
}

func documentView(d domain.Document) documentJSON {
	return documentJSON{ID: d.ID, Filename: d.Filename, ContentType: d.ContentType, Size: d.Size, SHA256: fmt.Sprintf("%x", d.SHA256),
		UploadedBy: d.UploaderEmail, CreatedAt: d.CreatedAt}
}

// uploadDocuments takes a multipart upload (its "files" parts) to a
// suspension that asks for documents, with the page's checks, limits and
// streaming (web.Server.UploadDocuments), and resumes the suspension with
// them as the caller: a founder's key reaches only the founder's own
// requests, and the request's assignment and approvers apply as on the
// page. It answers the suspension, resumed, and the documents.
func (s *api) uploadDocuments(w http.ResponseWriter, r *http.Request) error {
	p := web.PrincipalFrom(r.Context())
	sp, err := s.VisibleSuspension(r, p, r.PathValue("id"))
	if err != nil {
		return err
	}
	if len(sp.Accept) > 0 {
		if err := sp.CheckActor(p.User); err != nil {
			return err
		}
	}
	out, docs, err := s.UploadDocuments(w, r, sp, p.User, func(data json.RawMessage, ids []string) (domain.Suspension, error) {
		return s.Engine.Resume(r.Context(), domain.ResumeRequest{SuspensionID: sp.ID, Data: data, By: p.User.Email, Actor: &p.User, Documents: ids,
			Audit: s.apiAudit(r, "suspension.resume", map[string]any{"runId": sp.RunID, "resumeData": data})})
	})
	if err != nil {
		return err
	}
	listed := make([]documentJSON, len(docs))
	for i, d := range docs {
		listed[i] = documentView(d)
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{"suspension": s.SuspensionOut(r, out), "documents": listed})
	return nil
}
