package ui

import (
	"errors"
	"net/http"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/views"
)

// Destructive actions are asked about first, on a page of their own that
// works without JavaScript: it names the thing and says what follows, and
// its button posts to the action's handler, which alone acts (and which an
// admin may still post to directly). Cancel goes back.

// confirmRevokeKey asks before revokeKey.
func (s *pages) confirmRevokeKey(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	k, err := s.UIStore.APIKey(r.Context(), r.PathValue("id"))
	switch {
	case err != nil && !errors.Is(err, domain.ErrNotFound):
		s.UIFailure(w, r, err)
	case err != nil || k.RevokedAt != nil:
		s.RenderError(w, r, http.StatusNotFound, "Key not found", "That key is already revoked or does not exist.", v)
	default:
		s.Render(w, r, http.StatusOK, views.Confirm(views.ConfirmPage{Viewer: v,
			Question:    "Revoke key ‘" + k.Name + "’?",
			Consequence: "Programs using it will stop working at once. A revoked key cannot be restored; they will need a new key.",
			Action:      "/admin/keys/" + k.ID + "/revoke", Button: "Revoke the key", Back: "/admin/users"}))
	}
}

// confirmDisableUser asks before updateUser disables an account.
func (s *pages) confirmDisableUser(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	u, err := s.UIStore.User(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, domain.ErrNotFound):
		s.RenderError(w, r, http.StatusNotFound, "User not found", "That user no longer exists.", v)
	case err != nil:
		s.UIFailure(w, r, err)
	case u.ID == v.ID:
		s.RenderError(w, r, http.StatusUnprocessableEntity, "Not your own account", "You cannot disable your own account; ask another admin.", v)
	case u.Disabled:
		http.Redirect(w, r, "/admin/users#user-"+u.ID, http.StatusSeeOther)
	default:
		s.Render(w, r, http.StatusOK, views.Confirm(views.ConfirmPage{Viewer: v,
			Question:    "Disable the account of " + u.Email + "?",
			Consequence: "They are signed out everywhere at once and cannot sign in, and their API keys stop working, until an admin enables the account again.",
			Action:      "/admin/users/" + u.ID, Fields: []views.HiddenField{{Name: "role", Value: string(u.Role)}, {Name: "disabled", Value: "true"}},
			Button: "Disable the account", Back: "/admin/users#user-" + u.ID}))
	}
}

// confirmCancelRun asks before cancelFromPage.
func (s *pages) confirmCancelRun(w http.ResponseWriter, r *http.Request) {
	v := s.ViewerOf(r)
	run, err := s.Store.Run(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, domain.ErrNotFound):
		s.RenderError(w, r, http.StatusNotFound, "Run not found", "There is no run with this id.", v)
	case err != nil:
		s.UIFailure(w, r, err)
	case run.Status.Terminal():
		s.RenderError(w, r, http.StatusConflict, "The run has already finished", "A finished run cannot be cancelled.", v)
	default:
		s.Render(w, r, http.StatusOK, views.Confirm(cancelRunPage(v, run, "", "")))
	}
}

// cancelRunPage asks whether to cancel run, and why (optional): the
// reason typed, marked with problem when it was refused.
func cancelRunPage(v *views.Viewer, run domain.Run, reason, problem string) views.ConfirmPage {
	return views.ConfirmPage{Viewer: v,
		Question:    "Cancel this run of " + run.WorkflowID + "?",
		Consequence: "It stops where it is and does not continue: what it waits for is cancelled, and nobody can resume it. This cannot be undone.",
		ReasonLabel: "Why (optional)", ReasonHint: "Kept with the run and in the audit log; at most 500 characters.",
		Reason: reason, ReasonError: problem, ReasonOptional: true,
		Action: "/runs/" + run.ID + "/cancel", Button: "Yes, cancel the run", Back: "/runs/" + run.ID, BackLabel: "No, let it go on"}
}
