package api

import (
	"encoding/json"
	"net/http"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/web"
)

// sendSignal delivers a signal to a run: 200 when it resolved a wait, 202
// when it is kept for a wait the run has not reached. A repeat of a
// signal id answers as the first delivery did, with duplicate set; a
// delivery to a wait that has already ended, or by name only when the
// run has resolved its wait of that name and has none pending, is 409
// signal_lost; one for a branch of an any group that another branch won
// is 410 branch_not_taken (see domain.DecideSignal). Signals drive runs,
// so only staff send them.
func (s *api) sendSignal(w http.ResponseWriter, r *http.Request) error {
	p := web.PrincipalFrom(r.Context())
	if !p.User.Role.Staff() {
		return web.ErrForbidden
	}
	var body struct {
		Name     string          `json:"name"`
		SignalID string          `json:"signalId"`
		StepID   string          `json:"stepId"`
		Payload  json.RawMessage `json:"payload"`
	}
	if err := web.DecodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	sig, err := s.Engine.Signal(r.Context(), domain.SignalRequest{
		RunID: r.PathValue("runId"), Name: body.Name, SignalID: body.SignalID, StepKey: body.StepID, Payload: body.Payload, By: p.User.Email,
		Audit: s.apiAudit(r, "run.signal", map[string]any{"name": body.Name, "signalId": body.SignalID, "stepId": body.StepID, "payload": body.Payload}),
	})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if sig.DeliveredAt == nil {
		status = http.StatusAccepted
	}
	web.WriteJSON(w, status, web.SignalView(sig))
	return nil
}
