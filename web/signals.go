package web

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

type signalJSON struct {
	RunID       string          `json:"runId"`
	Name        string          `json:"name"`
	SignalID    string          `json:"signalId"`
	StepID      string          `json:"stepId,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	Status      string          `json:"status"` // delivered or kept
	Duplicate   bool            `json:"duplicate"`
	SentBy      string          `json:"sentBy"`
	SentAt      time.Time       `json:"sentAt"`
	DeliveredAt *time.Time      `json:"deliveredAt,omitempty"`
}

// sendSignal delivers a signal to a run: 200 when it resolved a wait, 202
// when it is kept for a wait the run has not reached. A repeat of a
// signal id answers as the first delivery did, with duplicate set; a
// delivery to a wait that has already ended is 409 signal_lost. Signals
// drive runs, so only staff send them.
func (s *Server) sendSignal(w http.ResponseWriter, r *http.Request) error {
	p := principalFrom(r.Context())
	if !isStaff(p) {
		return errForbidden
	}
	var body struct {
		Name     string          `json:"name"`
		SignalID string          `json:"signalId"`
		StepID   string          `json:"stepId"`
		Payload  json.RawMessage `json:"payload"`
	}
	if err := decodeJSON(w, r, &body, s.MaxBody); err != nil {
		return err
	}
	sig, err := s.Engine.Signal(r.Context(), domain.SignalRequest{
		RunID: r.PathValue("runId"), Name: body.Name, SignalID: body.SignalID, StepKey: body.StepID, Payload: body.Payload, By: p.User.Email,
	})
	if err != nil {
		return err
	}
	out := signalJSON{RunID: sig.RunID, Name: sig.Name, SignalID: sig.SignalID, StepID: sig.StepKey, Payload: sig.Payload,
		Status: "delivered", Duplicate: sig.Duplicate, SentBy: sig.SentBy, SentAt: sig.SentAt, DeliveredAt: sig.DeliveredAt}
	status := http.StatusOK
	if sig.DeliveredAt == nil {
		out.Status, status = "kept", http.StatusAccepted
	}
	writeJSON(w, status, out)
	return nil
}
