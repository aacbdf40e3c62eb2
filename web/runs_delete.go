package web

import (
	"net/http"

	"github.com/tollgatehq/tollgate/domain"
)

// deleteRun deletes a run at once, finished or not, with everything that
// belongs to it (admins only): for data that must not be kept, or a run
// started by mistake. The body gives the reason, {"reason": "…"}, which
// the audit log keeps with the admin's email; there is no undo, so the
// reason is required. 204 when the run is gone.
func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) error {
	p := principalFrom(r.Context())
	if p.User.Role != domain.RoleAdmin {
		return errForbidden
	}
	var body struct {
		Reason string `json:"reason"`
	}
	if err := decodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	if err := s.Engine.DeleteRun(r.Context(), r.PathValue("runId"), body.Reason, p.User.Email); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
