package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/storage"
	"github.com/tollgatehq/tollgate/storage/storagetest"
	"github.com/tollgatehq/tollgate/web"
)

// linger asks for a go-ahead; once given, its next step holds its run
// running until the environment ends (gate), so that whoever waits for
// what the run does next waits for as long as they asked.
func (e *apiEnv) linger() *domain.Workflow {
	return domain.NewWorkflow("linger", "1").
		Step("ask", func(context.Context, domain.StepRequest) (domain.StepResult, error) {
			return domain.StepResult{Commands: []domain.Command{domain.Suspend("awaiting_go_ahead", nil, "hold")}}, nil
		}).
		Step("hold", func(ctx context.Context, _ domain.StepRequest) (domain.StepResult, error) {
			select {
			case <-e.gate:
			case <-ctx.Done():
				return domain.StepResult{}, ctx.Err()
			}
			return domain.StepResult{Output: map[string]bool{"held": true}}, nil
		})
}

// pausedMany starts n runs of linger and returns their pending
// suspensions' ids once every run is paused.
func (e *apiEnv) pausedMany(t *testing.T, n int) []string {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			want(t, e.call(t, "POST", "/api/v1/workflows/linger/runs", e.admin, `{}`), http.StatusCreated)
		})
	}
	wg.Wait()
	deadline := time.Now().Add(60 * time.Second)
	for {
		p := decode[pageBody[suspensionBody]](t, e.call(t, "GET", "/api/v1/suspensions?status=pending&reason=awaiting_go_ahead&limit=500", e.admin, ""), http.StatusOK)
		if len(p.Items) == n {
			ids := make([]string, n)
			for i, s := range p.Items {
				ids[i] = s.ID
			}
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs paused", len(p.Items), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitAnswer is the answer to one resume with ?wait=.
type waitAnswer struct {
	status int
	header http.Header
	body   string
	err    error
}

// resumeWaiting resumes each suspension of ids at once, with ?wait=wait,
// in the name of keys[i%len(keys)], and returns the answers in order. The
// i-th request carries the request id wait-i.
func (e *apiEnv) resumeWaiting(t *testing.T, ids []string, wait time.Duration, keys ...string) []waitAnswer {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: len(ids)}, Timeout: time.Minute}
	t.Cleanup(client.CloseIdleConnections)
	answers := make([]waitAnswer, len(ids))
	start := make(chan struct{})
	var ready, wg sync.WaitGroup
	for i, id := range ids {
		ready.Add(1)
		wg.Go(func() {
			a := &answers[i]
			a.err = warm(client, e.srv.URL) // a connection of its own, made beforehand
			ready.Done()
			if a.err != nil {
				return
			}
			req, err := http.NewRequestWithContext(t.Context(), "POST", e.srv.URL+"/api/v1/suspensions/"+id+"/resume?wait="+url.QueryEscape(wait.String()),
				strings.NewReader(`{"resumeData":{"go":true}}`))
			if err != nil {
				a.err = err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+keys[i%len(keys)])
			req.Header.Set("X-Request-Id", fmt.Sprintf("wait-%d", i))
			<-start
			resp, err := client.Do(req)
			if err != nil {
				a.err = err
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			a.status, a.header, a.body, a.err = resp.StatusCode, resp.Header, string(b), err
		})
	}
	ready.Wait()
	close(start)
	wg.Wait()
	return answers
}

// warm opens a connection of client's to the server at base, left idle
// for the next request.
func warm(client *http.Client, base string) error {
	resp, err := client.Get(base + "/healthz")
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err
}

// serverTimes times each request the server serves, by its request id,
// from when the server has read it to when the handler returns: what the
// server answers for, apart from how fast the machine reads requests.
type serverTimes struct{ took sync.Map }

func (st *serverTimes) around(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		next.ServeHTTP(w, r)
		st.took.Store(r.Header.Get("X-Request-Id"), time.Since(began))
	})
}

func (st *serverTimes) of(requestID string) time.Duration {
	d, _ := st.took.Load(requestID)
	took, _ := d.(time.Duration)
	return took
}

// keysOf makes n more API keys of the user with email, each a caller of
// its own.
func (e *apiEnv) keysOf(t *testing.T, email string, n int) []string {
	t.Helper()
	keys := make([]string, n)
	for i := range keys {
		_, keys[i] = e.addKey(t, e.userIDs[email])
	}
	return keys
}

// Under many waits at once, each answer still comes within the wait its
// caller asked for, plus a small margin, counted from the request: with
// what the run did by then, here that it still runs. Every wait follows a
// run and reads it, and the resumes themselves queue for the database, so
// a wait that counts from after its resume, or that reads on past its
// deadline, answers late.
//
// make soak holds 300 waits at once; make test holds 100, which still
// fails a wait counted from after its resume: 100 resumes at once under
// -race take up to 3 s to commit on two busy cores, six times the margin.
func TestAPIWaitHoldsItsBoundUnderLoad(t *testing.T) {
	t.Parallel()
	const (
		bound  = 8 * time.Second // beyond what the resumes take on a slow machine
		margin = 500 * time.Millisecond
	)
	waits := 100
	if soaking() {
		waits = 300
	}
	st := &serverTimes{}
	e := newAPIEnvAround(t, storage.Opts{URL: storagetest.NewDatabase(t)}, nil, st.around)
	ids := e.pausedMany(t, waits)
	answers := e.resumeWaiting(t, ids, bound, e.keysOf(t, reviewerEmail, 6)...)
	var slowest time.Duration
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Errorf("wait %d: %v", i, a.err)
			continue
		case a.status != http.StatusOK:
			t.Errorf("wait %d = %d %s; want 200", i, a.status, a.body)
		case !strings.Contains(a.body, `"next":{`) || !strings.Contains(a.body, `"status":"running"`):
			t.Errorf("wait %d answered %s; want the run still running", i, a.body)
		}
		took := st.of(fmt.Sprintf("wait-%d", i))
		slowest = max(slowest, took)
		if took > bound+margin {
			t.Errorf("wait %d answered after %v; want at most %v", i, took.Round(time.Millisecond), bound+margin)
		}
	}
	t.Logf("%d waits of %v: the slowest answered after %v", waits, bound, slowest.Round(time.Millisecond))
}

// One caller holds at most MaxWaitsPerCaller waits at once: one more is
// refused with 429 too_many_waits and a Retry-After, and changes nothing;
// another caller, even another key of the same person, is not held back,
// and the caller waits again once its waits have ended.
func TestAPIWaitsPerCallerAreCapped(t *testing.T) {
	t.Parallel()
	const limit, bound = 4, 10 * time.Second
	e := newAPIEnv(t, storage.Opts{SQLitePath: filepath.Join(t.TempDir(), "tollgate.db")}, func(s *web.Server) { s.MaxWaitsPerCaller = limit })
	ids := e.pausedMany(t, limit+3)
	held := make(chan waitAnswer, limit)
	for i := range limit {
		go func() { held <- e.resumeWaiting(t, ids[i:i+1], bound, e.reviewer)[0] }()
	}
	for _, id := range ids[:limit] { // resumed, so each holds its slot
		for e.suspension(t, id).Status != "resumed" {
			time.Sleep(10 * time.Millisecond)
		}
	}

	over := e.call(t, "POST", "/api/v1/suspensions/"+ids[limit]+"/resume?wait=1s", e.reviewer, `{"resumeData":{"go":true}}`)
	problem(t, over, http.StatusTooManyRequests, web.CodeTooManyWaits)
	if ra, err := strconv.Atoi(over.Header.Get("Retry-After")); err != nil || ra < 1 || ra > int(bound/time.Second) {
		t.Errorf("Retry-After = %q; want the seconds until the first wait ends", over.Header.Get("Retry-After"))
	}
	if got := e.suspension(t, ids[limit]); got.Status != "pending" {
		t.Errorf("a refused wait resumed its suspension: %+v", got)
	}

	_, other := e.addKey(t, e.userIDs[reviewerEmail])
	for i, key := range []string{other, e.admin} {
		if a := e.resumeWaiting(t, ids[limit+1+i:limit+2+i], 50*time.Millisecond, key)[0]; a.status != http.StatusOK || !strings.Contains(a.body, `"next":{`) {
			t.Errorf("another caller's wait = %d %s; want 200 with what came next", a.status, a.body)
		}
	}

	e.releaseEarly() // the held runs finish, and their waits answer
	for range limit {
		if a := <-held; a.status != http.StatusOK || !strings.Contains(a.body, `"status":"succeeded"`) {
			t.Errorf("a held wait = %d %s; want 200 with the run's result", a.status, a.body)
		}
	}
	want(t, e.call(t, "POST", "/api/v1/suspensions/"+ids[limit]+"/resume?wait=5s", e.reviewer, `{"resumeData":{"go":true}}`), http.StatusOK) // the slots are free again
}
