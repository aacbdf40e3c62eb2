package web

import (
	"net/http"

	"github.com/tollgatehq/tollgate/domain"
)

// deleteRun deletes a run at once, finished or not, with everything that
// belongs to it (admins only): for data that must not be kept, or a run
// started by mistake. The body gives the reason, {"reason": "…"}, which
// the audit log keeps with the admin, as for every API action; there is
// no undo, so the reason is required. 204 when the run is gone.
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
	req := domain.DeleteRunRequest{RunID: r.PathValue("runId"), Reason: body.Reason, Audit: s.apiAudit(r, "run.delete", map[string]any{})}
	if err := s.Engine.DeleteRun(r.Context(), req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
