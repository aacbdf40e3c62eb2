package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// Saving a user records what changed as from and to values, only for the
// fields that changed, and the audit log lists them in the entry's
// details in words ("Role: reviewer → admin"). An entry written before
// changes were recorded still reads as it did, with its data and no list.
func TestUIUserUpdateAuditsWhatChanged(t *testing.T) {
	t.Parallel()
	forEachDialectWith(t, withUI, func(t *testing.T, e *apiEnv) {
		boss := e.signedIn(t, "boss@example.com", domain.RoleAdmin)
		ritaID, _ := e.addPerson(t, "rita@example.com", domain.RoleReviewer)
		save := func(form url.Values) {
			t.Helper()
			wantPage(t, boss.do("POST", "/admin/users/"+ritaID, form), http.StatusOK, "Saved rita@example.com")
		}
		save(url.Values{"role": {"admin"}})
		save(url.Values{"role": {"admin"}, "disabled": {"true"}})
		save(url.Values{"role": {"admin"}, "disabled": {"true"}})
		if err := e.db.AppendAudit(t.Context(), domain.AuditEntry{At: time.Now(), ActorID: "p-boss@example.com", ActorEmail: "boss@example.com",
			Action: "user.update", Subject: ritaID, Data: json.RawMessage(`{"email": "rita@example.com", "role": "founder", "disabled": false}`)}); err != nil {
			t.Fatal(err)
		}

		entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: "user.update"})
		if err != nil || len(entries) != 4 {
			t.Fatalf("user.update entries = %d, %v", len(entries), err)
		}
		var got []string
		for _, en := range entries[1:] { // newest first; the first is the old-style entry
			var data struct{ Changes json.RawMessage }
			if err := json.Unmarshal(en.Data, &data); err != nil {
				t.Fatal(err)
			}
			got = append(got, string(data.Changes))
		}
		wantChanges := []string{`{}`, `{"disabled":{"from":false,"to":true}}`, `{"role":{"from":"reviewer","to":"admin"}}`}
		for i := range wantChanges {
			if i >= len(got) || !sameJSON(t, json.RawMessage(got[i]), json.RawMessage(wantChanges[i])) {
				t.Fatalf("changes, newest first = %q; want %q", got, wantChanges)
			}
		}

		page := boss.get("/admin/audit?action=user.update")
		wantPage(t, page, http.StatusOK, `<ul class="audit-changes" aria-label="Changes"><li>Role: reviewer → admin</li></ul>`,
			`<li>Account: active → disabled</li>`, "to founder, account active")
		if n := strings.Count(page.Body, `class="audit-changes"`); n != 2 {
			t.Errorf("%d entries list changes; want the two that changed something", n)
		}
	})
}
