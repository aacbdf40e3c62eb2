package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// resumeResult is one racer's answer.
type resumeResult struct {
	status int
	body   []byte
	err    error
}

// race sends n resumes of one suspension at once, each with its own data,
// and returns the answers by racer.
func (e *apiEnv) race(t *testing.T, suspensionID, key string, n int) []resumeResult {
	t.Helper()
	results := make([]resumeResult, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), "POST", e.srv.URL+"/api/v1/suspensions/"+suspensionID+"/resume",
				strings.NewReader(resumeBody(fmt.Sprintf("doc-%d", i))))
			if err != nil {
				results[i].err = err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
			<-start
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				results[i].err = err
				return
			}
			defer resp.Body.Close()
			results[i].status = resp.StatusCode
			results[i].body, results[i].err = io.ReadAll(resp.Body)
		})
	}
	close(start)
	wg.Wait()
	return results
}

func TestAPIConcurrentResumes(t *testing.T) {
	t.Parallel()
	const racers = 100
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		run, s := e.paused(t, "intake", map[string]string{"claimId": "c-1"})
		results := e.race(t, s.ID, e.reviewer, racers)

		winner := -1
		var winning suspensionBody
		var conflicts []problemBody
		for i, r := range results {
			switch {
			case r.err != nil:
				t.Fatalf("racer %d: %v", i, r.err)
			case r.status == http.StatusOK:
				if winner >= 0 {
					t.Fatalf("racers %d and %d both won", winner, i)
				}
				winner = i
				if err := json.Unmarshal(r.body, &winning); err != nil {
					t.Fatal(err)
				}
			case r.status == http.StatusConflict:
				var p problemBody
				if err := json.Unmarshal(r.body, &p); err != nil {
					t.Fatal(err)
				}
				conflicts = append(conflicts, p)
			default:
				t.Fatalf("racer %d: %d %s", i, r.status, r.body)
			}
		}
		if winner < 0 || len(conflicts) != racers-1 {
			t.Fatalf("%d winners and %d conflicts; want 1 and %d", min(winner+1, 1), len(conflicts), racers-1)
		}
		wantData := json.RawMessage(resumeBody(fmt.Sprintf("doc-%d", winner)))
		var wantResume struct {
			ResumeData json.RawMessage `json:"resumeData"`
		}
		if err := json.Unmarshal(wantData, &wantResume); err != nil {
			t.Fatal(err)
		}
		if !sameJSON(t, winning.ResumeData, wantResume.ResumeData) || winning.ResumedAt == nil {
			t.Fatalf("winner %d answered %+v", winner, winning)
		}
		for _, p := range conflicts {
			if p.Code != "already_resumed" || p.ResumedBy != reviewerEmail || p.ResumedAt == nil || !p.ResumedAt.Equal(*winning.ResumedAt) {
				t.Errorf("conflict = %+v; want already_resumed by %s at %v", p, reviewerEmail, winning.ResumedAt)
			}
		}

		done := e.waitRun(t, run.ID, "succeeded")
		if !strings.Contains(string(done.Output), fmt.Sprintf(`"doc-%d"`, winner)) {
			t.Errorf("run output %s is not the winner's data", done.Output)
		}
		if got := e.suspension(t, s.ID); !sameJSON(t, got.ResumeData, wantResume.ResumeData) {
			t.Errorf("stored resume data %s; want the winner's %s", got.ResumeData, wantResume.ResumeData)
		}
		time.Sleep(100 * time.Millisecond) // a second resume job would run now
		if n := e.finished.Load(); n != 1 {
			t.Errorf("resume step ran %d times; want exactly 1", n)
		}
		resumed := 0
		for _, ev := range decode[pageBody[eventBody]](t, e.call(t, "GET", "/api/v1/runs/"+run.ID+"/events", e.admin, ""), http.StatusOK).Items {
			if ev.Type == "RUN_RESUMED" {
				resumed++
			}
		}
		if resumed != 1 {
			t.Errorf("%d RUN_RESUMED events; want 1", resumed)
		}
	})
}

// A resume addressed by step key may arrive just before, during or after the
// commit of its pause. Whenever it lands, it is accepted once (202 kept, or
// 200 applied) and the run continues with its data.
func TestAPIStepResumeRacesPause(t *testing.T) {
	t.Parallel()
	const runs = 40
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		var ids []string
		for i := range runs {
			run := e.startRun(t, "intake", map[string]string{"claimId": fmt.Sprint("c-", i)})
			ids = append(ids, run.ID)
			time.Sleep(time.Duration(i%8) * time.Millisecond) // spread the resumes over the step's commit
			r := e.call(t, "POST", "/api/v1/runs/"+run.ID+"/steps/collect/resume", e.admin, resumeBody(fmt.Sprint("d-", i)))
			if r.Status != http.StatusOK && r.Status != http.StatusAccepted {
				t.Errorf("run %d: step resume = %s; want 200 or 202", i, r)
			}
		}
		for i, id := range ids {
			done := e.waitRun(t, id, "succeeded")
			if !strings.Contains(string(done.Output), fmt.Sprintf(`"d-%d"`, i)) {
				t.Errorf("run %d output %s lacks its resume data", i, done.Output)
			}
		}
		if n := e.finished.Load(); n != runs {
			t.Errorf("resume step ran %d times; want %d", n, runs)
		}
	})
}
