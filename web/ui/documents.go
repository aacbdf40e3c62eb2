package ui

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
	"github.com/tollgatehq/tollgate/web"
)

// uploadDocuments stores the files a person uploads to a suspension that
// asks for documents and resumes it with them (web.Server.UploadDocuments),
// then shows the request again, answered.
func (s *pages) uploadDocuments(w http.ResponseWriter, r *http.Request) {
	sp, v, ok := s.loadSuspension(w, r)
	if !ok {
		return
	}
	if len(sp.Accept) > 0 && !s.mayAct(w, r, sp, v) {
		return
	}
	by := web.ViewerPrincipal(v).User
	_, _, err := s.UploadDocuments(w, r, sp, by, func(data json.RawMessage, ids []string) (domain.Suspension, error) {
		return sp, s.resume(r, sp, v, data, ids...)
	})
	if ue, ok := errors.AsType[*web.UploadError](err); ok {
		s.uploadFailed(w, r, sp, v, ue.Err)
		return
	}
	if err != nil {
		s.actionFailed(w, r, sp, v, "", err)
		return
	}
	http.Redirect(w, r, "/suspensions/"+sp.ID+"?done=resumed", http.StatusSeeOther)
}

// uploadFailed explains a refused upload; one that could not be read (the
// connection broke) or stored is not the person's fault.
func (s *pages) uploadFailed(w http.ResponseWriter, r *http.Request, sp domain.Suspension, v *views.Viewer, err error) {
	if busy, ok := errors.AsType[*web.TooManyUploadsError](err); ok {
		w.Header().Set("Retry-After", strconv.Itoa(busy.RetryAfterSeconds()))
		s.refuse(w, r, sp, v, "", http.StatusTooManyRequests, &domain.ValidationError{Message: busy.Message})
		return
	}
	if ve, ok := errors.AsType[*domain.ValidationError](err); ok {
		s.refuse(w, r, sp, v, "", web.ValidationStatus(ve.Code), ve)
		return
	}
	if r.Context().Err() == nil && !web.IsReadError(err) {
		s.UIFailure(w, r, err)
		return
	}
	s.refuse(w, r, sp, v, "", http.StatusBadRequest, &domain.ValidationError{Message: "The upload could not be read. Try again."})
}

// documentViews lists a suspension's documents for its page.
func (s *pages) documentViews(r *http.Request, sp domain.Suspension) []domain.Document {
	docs, err := s.UIStore.Documents(r.Context(), sp.ID)
	if err != nil {
		s.Log.ErrorContext(r.Context(), "Listing documents failed", "suspension_id", sp.ID, "error", err)
	}
	return docs
}
