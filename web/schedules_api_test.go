package web_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/web"
)

type scheduleBody struct {
	ID          string      `json:"id"`
	WorkflowID  string      `json:"workflowId"`
	Cron        string      `json:"cron"`
	EveryMs     int64       `json:"everyMs"`
	Timezone    string      `json:"timezone"`
	Overlap     string      `json:"overlap"`
	CatchUpMs   int64       `json:"catchUpWindowMs"`
	Paused      bool        `json:"paused"`
	Description string      `json:"description"`
	Source      string      `json:"source"`
	NextFireAt  *time.Time  `json:"nextFireAt"`
	NextFires   []time.Time `json:"nextFires"`
	Fires       []struct {
		At      time.Time `json:"at"`
		Outcome string    `json:"outcome"`
		RunID   string    `json:"runId"`
		Manual  bool      `json:"manual"`
		By      string    `json:"by"`
	} `json:"fires"`
}

func TestScheduleAPI(t *testing.T) {
	// With the audit log on (UIStore), so that schedules' entries are
	// written.
	auditOn := func(srv *web.Server) { srv.UIStore = srv.Store.(*storage.DB) }
	forEachDialectWith(t, auditOn, func(t *testing.T, e *apiEnv) {
		create := `{"id":"monthly-review","workflowId":"delay","cron":"0 9 * * 1-5","timezone":"Europe/Lisbon","input":{"ms":60000},"note":"the monthly expense review"}`
		r := e.call(t, "POST", "/api/v1/schedules", e.admin, create)
		sc := decode[scheduleBody](t, r, http.StatusCreated)
		if r.Header.Get("Location") != "/api/v1/schedules/monthly-review" || sc.Description != "Every weekday at 09:00 Europe/Lisbon" ||
			sc.Overlap != "skip" || sc.CatchUpMs != 60000 || sc.Source != "api" || sc.NextFireAt == nil {
			t.Fatalf("created %s", r)
		}
		problem(t, e.call(t, "POST", "/api/v1/schedules", e.admin, create), http.StatusConflict, domain.CodeConflict)

		// Bad input names each problem by its place, and creates nothing.
		p := problem(t, e.call(t, "POST", "/api/v1/schedules", e.admin, `{"id":"Bad Id","workflowId":"delay","cron":"61 * * * *","timezone":"Mars/Olympus","overlap":"queue"}`),
			http.StatusUnprocessableEntity, domain.CodeValidation)
		for _, f := range []string{"/id", "/cron", "/timezone", "/overlap"} {
			if !hasField(p, f) {
				t.Errorf("no problem at %s: %+v", f, p.Errors)
			}
		}
		p = problem(t, e.call(t, "POST", "/api/v1/schedules", e.admin, `{"id":"x","workflowId":"no-such-workflow","everyMs":60000}`), http.StatusUnprocessableEntity, domain.CodeValidation)
		if !hasField(p, "/workflowId") {
			t.Errorf("unknown workflow: %+v", p.Errors)
		}
		problem(t, e.call(t, "POST", "/api/v1/schedules", e.admin, `{"id":"x","workflowId":"delay","everyMs":60000,"extra":1}`), http.StatusBadRequest, domain.CodeInvalidJSON)

		// Only admins.
		for _, key := range []string{e.reviewer, e.founderA} {
			problem(t, e.call(t, "GET", "/api/v1/schedules", key, ""), http.StatusForbidden, "forbidden")
			problem(t, e.call(t, "POST", "/api/v1/schedules/monthly-review/trigger", key, ""), http.StatusForbidden, "forbidden")
		}

		got := decode[scheduleBody](t, e.call(t, "GET", "/api/v1/schedules/monthly-review", e.admin, ""), http.StatusOK)
		if len(got.NextFires) != 5 || !got.NextFires[0].Equal(*got.NextFireAt) {
			t.Fatalf("next fires %v", got.NextFires)
		}
		lisbon, _ := time.LoadLocation("Europe/Lisbon")
		for _, f := range got.NextFires {
			if l := f.In(lisbon); l.Hour() != 9 || l.Minute() != 0 || l.Weekday() == time.Saturday || l.Weekday() == time.Sunday {
				t.Fatalf("fire at %v", l)
			}
		}

		// Trigger: a run now, in the schedule's name.
		r = e.call(t, "POST", "/api/v1/schedules/monthly-review/trigger", e.admin, "")
		run := decode[struct {
			ID         string          `json:"id"`
			ScheduleID string          `json:"scheduleId"`
			Input      json.RawMessage `json:"input"`
		}](t, r, http.StatusCreated)
		var in struct {
			MS          int    `json:"ms"`
			ScheduledAt string `json:"scheduledAt"`
		}
		if json.Unmarshal(run.Input, &in); run.ScheduleID != "monthly-review" || in.MS != 60000 || in.ScheduledAt == "" {
			t.Fatalf("triggered run %s", r)
		}
		got = decode[scheduleBody](t, e.call(t, "GET", "/api/v1/schedules/monthly-review", e.admin, ""), http.StatusOK)
		if len(got.Fires) != 1 || got.Fires[0].RunID != run.ID || !got.Fires[0].Manual || got.Fires[0].By != adminEmail {
			t.Fatalf("fires %+v", got.Fires)
		}

		// Pause and resume; the audit log says who.
		paused := decode[scheduleBody](t, e.call(t, "PATCH", "/api/v1/schedules/monthly-review", e.admin, `{"paused":true}`), http.StatusOK)
		if !paused.Paused || paused.NextFireAt != nil {
			t.Fatalf("paused %+v", paused)
		}
		resumed := decode[scheduleBody](t, e.call(t, "PATCH", "/api/v1/schedules/monthly-review", e.admin, `{"paused":false,"everyMs":3600000}`), http.StatusOK)
		if resumed.Paused || resumed.Cron != "" || resumed.EveryMs != 3600000 || resumed.Description != "Every hour" || resumed.NextFireAt == nil {
			t.Fatalf("resumed %+v", resumed)
		}
		problem(t, e.call(t, "PATCH", "/api/v1/schedules/monthly-review", e.admin, `{"timezone":"Nowhere/Else"}`), http.StatusUnprocessableEntity, domain.CodeValidation)
		for _, action := range []string{"schedule.create", "schedule.pause", "schedule.resume", "run.start"} {
			entries, _, err := e.db.Audit(t.Context(), domain.AuditFilter{Action: action})
			if err != nil || len(entries) != 1 || entries[0].ActorEmail != adminEmail {
				t.Errorf("audit %s: %+v %v", action, entries, err)
			}
		}

		list := decode[struct {
			Items      []scheduleBody `json:"items"`
			NextCursor string         `json:"nextCursor"`
		}](t, e.call(t, "GET", "/api/v1/schedules?limit=1", e.admin, ""), http.StatusOK)
		if len(list.Items) != 1 || list.Items[0].ID != "monthly-review" {
			t.Fatalf("list %+v", list)
		}
		want(t, e.call(t, "DELETE", "/api/v1/schedules/monthly-review", e.admin, ""), http.StatusNoContent)
		problem(t, e.call(t, "GET", "/api/v1/schedules/monthly-review", e.admin, ""), http.StatusNotFound, domain.CodeNotFound)
		// The run it started stays, and still says so.
		if r := e.run(t, run.ID); r.ID != run.ID {
			t.Fatal("the run went with its schedule")
		}
	})
}
