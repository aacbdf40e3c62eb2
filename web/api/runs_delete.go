package api

import (
	"net/http"

	"github.com/tollgatehq/tollgate/domain"
)

// deleteRun deletes a run at once, finished or not, with everything that
// belongs to it (admins only): for data that must not be kept, or a run
// started by mistake. The body gives the reason, {"reason": "…"}, which
// the audit log keeps with the admin, as for every API action; there is
// no undo, so the reason is required. 204 when the run is gone.
func (s *api) deleteRun(w http.ResponseWriter, r *http.Request) error {
	_, reason, err := s.adminWithReason(w, r)
	if err != nil {
		return err
	}
	req := domain.DeleteRunRequest{RunID: r.PathValue("runId"), Reason: reason, Audit: s.apiAudit(r, "run.delete", map[string]any{})}
	if err := s.Engine.DeleteRun(r.Context(), req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
