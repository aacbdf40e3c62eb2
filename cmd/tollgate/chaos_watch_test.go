package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiclient "github.com/tollgatehq/tollgate/client"
	"github.com/tollgatehq/tollgate/domain"
	"github.com/tollgatehq/tollgate/domain/hook"
	"github.com/tollgatehq/tollgate/storage"
)

// The chaos test's people and watchers: a founder who uploads documents
// through the web app, staff who follow runs live, and a webhook
// subscriber. Each goes through whichever server its request reaches.

// chaosFounder is the founder of the chaos test's claims, signed in to
// the web app; the session is the database's, so any server knows it.
type chaosFounder struct {
	email string
	hc    *http.Client
}

// signInFounder adds the founder (`tollgate user add`) and signs them in,
// trying again while the server reached is down.
func signInFounder(ctx context.Context, t *testing.T, env map[string]string, transport http.RoundTripper) (*chaosFounder, error) {
	env = cloneEnv(env)
	env["TOLLGATE_PASSWORD"] = "a long enough password"
	const email = "chaos-founder@example.com"
	var out bytes.Buffer
	if err := run(ctx, []string{"user", "add", "--email", email, "--role", "founder"}, envFunc(env), &out, &out); err != nil {
		return nil, fmt.Errorf("user add: %v\n%s", err, out.String())
	}
	hc, err := signInRetrying(ctx, transport, "http://tollgate", email, env["TOLLGATE_PASSWORD"])
	if err != nil {
		return nil, err
	}
	return &chaosFounder{email: email, hc: hc}, nil
}

// pngStatement is a small PNG: what the server sniffs decides its type.
var pngStatement = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{7}, 2048)...)

// uploadCycle starts a claim that states figures, waits for its request
// for documents, and has the founder upload a statement through the web
// app, again after a server died under the upload unless the request is
// no longer pending. The run must then succeed, verified by the one
// document uploaded; it returns the run's and the request's ids.
func (d *crashDriver) uploadCycle(ctx context.Context, f *chaosFounder, i int) (runID, suspensionID string, err error) {
	runID, err = d.startRun(ctx, "claim-verification", fmt.Sprint("upload-", i),
		map[string]any{"claimId": fmt.Sprint("chaos-", i), "claimText": "Revenue up 300%", "founderEmail": f.email})
	if err != nil {
		return runID, "", err
	}
	paused, err := awaitStatus(ctx, d.getRun, runID, "suspended", 20*time.Millisecond)
	if err != nil {
		return runID, "", err
	}
	k := slices.IndexFunc(paused.Suspensions, func(sp apiSuspension) bool { return sp.Status == "pending" })
	if k < 0 {
		return runID, "", fmt.Errorf("run %s is suspended with nothing pending", runID)
	}
	suspensionID = paused.Suspensions[k].ID
	for {
		status, err := f.upload(ctx, suspensionID, fmt.Sprintf("statement-%d.png", i))
		if err == nil && status == http.StatusSeeOther {
			break
		}
		if ctx.Err() != nil {
			return runID, suspensionID, ctx.Err()
		}
		// A server killed under the upload may have committed it: the
		// request is then no longer pending, and uploading again would be
		// refused.
		r, gerr := d.getRun(ctx, runID)
		if gerr != nil {
			return runID, suspensionID, gerr
		}
		if k := slices.IndexFunc(r.Suspensions, func(sp apiSuspension) bool { return sp.ID == suspensionID }); k >= 0 && r.Suspensions[k].Status != "pending" {
			break
		}
		if err == nil && status < 500 && status != http.StatusTooManyRequests {
			return runID, suspensionID, fmt.Errorf("upload to %s: %d", suspensionID, status)
		}
		d.retries.Add(1)
		time.Sleep(20 * time.Millisecond)
	}
	done, err := awaitStatus(ctx, d.getRun, runID, string(domain.RunSucceeded), 50*time.Millisecond)
	if err != nil {
		return runID, suspensionID, err
	}
	var out struct {
		Verdict     string   `json:"verdict"`
		DocumentIDs []string `json:"documentIds"`
	}
	if err := json.Unmarshal(done.Output, &out); err != nil || out.Verdict != "verified" || len(out.DocumentIDs) != 1 {
		return runID, suspensionID, fmt.Errorf("run %s ended with %s; want verified by one document", runID, done.Output)
	}
	return runID, suspensionID, nil
}

// upload posts one file as the upload form does and returns the answer's
// status.
func (f *chaosFounder) upload(ctx context.Context, suspensionID, name string) (int, error) {
	status, _, err := postFile(ctx, f.hc, "http://tollgate/suspensions/"+suspensionID+"/documents", name, pngStatement)
	return status, err
}

// checkUploads checks that each claim's request for documents holds
// exactly the document its run was verified with: an upload cut short by
// a kill left nothing the request shows.
func checkUploads(t *testing.T, databaseURL string, c *client, requests map[string]string) {
	t.Helper()
	db, err := storage.Open(t.Context(), storage.Opts{URL: databaseURL})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for runID, suspensionID := range requests {
		run, err := c.getRun(t.Context(), runID)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			DocumentIDs []string `json:"documentIds"`
		}
		_ = json.Unmarshal(run.Output, &out)
		docs, err := db.Documents(t.Context(), suspensionID)
		if err != nil {
			t.Fatal(err)
		}
		if len(docs) != 1 || len(out.DocumentIDs) != 1 || docs[0].ID != out.DocumentIDs[0] || docs[0].ContentType != "image/png" {
			t.Errorf("run %s: its request %s holds %+v; want the one document %v the run names", runID, suspensionID, docs, out.DocumentIDs)
		}
	}
}

// chaosWatchers follow runs live through the API's event stream, each
// from its start to RUN_ENDED, opening it again where it left off (its
// Last-Event-ID) on whichever server answers when one dies or stops.
type chaosWatchers struct {
	c  *apiclient.Client
	wg sync.WaitGroup
	mu sync.Mutex
	// seen is each watched run's log entries in the order they came, and
	// ended the status its RUN_ENDED said.
	seen    map[string][]int64
	ended   map[string]string
	reopens atomic.Int64
	failed  atomic.Int64
	lastErr atomic.Pointer[string]
}

func newChaosWatchers(transport http.RoundTripper) *chaosWatchers {
	// No overall timeout: a stream lasts as long as its run.
	hc := &http.Client{Transport: transport}
	return &chaosWatchers{c: apiclient.New("http://tollgate", testKey, apiclient.WithHTTPClient(hc)), seen: map[string][]int64{}, ended: map[string]string{}}
}

// watch follows run id in the background until it ends or ctx does.
func (w *chaosWatchers) watch(ctx context.Context, id string) {
	w.mu.Lock()
	w.seen[id] = nil
	w.mu.Unlock()
	w.wg.Go(func() {
		last := ""
		for ctx.Err() == nil {
			var err error
			ended := false
			last, err = w.c.Attach(ctx, id, last, func(ev apiclient.StreamEvent) bool {
				switch {
				case ev.Type == "RUN_ENDED":
					var end struct{ Status string }
					_ = json.Unmarshal(ev.Data, &end)
					w.mu.Lock()
					w.ended[id] = end.Status
					w.mu.Unlock()
					ended = true
				case ev.ID != "":
					seq, _ := strconv.ParseInt(ev.ID, 10, 64)
					w.mu.Lock()
					w.seen[id] = append(w.seen[id], seq)
					w.mu.Unlock()
				}
				return true
			})
			if ended {
				return
			}
			if p, ok := errors.AsType[*apiclient.Problem](err); ok && p.Status < 500 && p.Status != http.StatusTooManyRequests {
				w.failed.Add(1)
				s := fmt.Sprintf("attach %s: %v", id, err)
				w.lastErr.Store(&s)
				return
			}
			w.reopens.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// check waits for every watcher and checks that each saw its run's whole
// log, each entry once and in order, and the status the run ended with.
func (w *chaosWatchers) check(t *testing.T, c *client) {
	t.Helper()
	w.wg.Wait()
	if n := w.failed.Load(); n > 0 {
		t.Errorf("%d watchers were refused; the last: %s", n, *w.lastErr.Load())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, seen := range w.seen {
		es := c.events(t, id)
		want := make([]int64, len(es))
		for i := range es {
			want[i] = int64(i + 1)
		}
		if !slices.Equal(seen, want) {
			t.Errorf("run %s: a live watcher saw log entries %v; the log has %d", id, seen, len(es))
		}
		if run, err := c.getRun(t.Context(), id); err != nil || w.ended[id] != run.Status {
			t.Errorf("run %s: a live watcher saw it end %q; it is %s (%v)", id, w.ended[id], run.Status, err)
		}
	}
}

// chaosSubscriber is the chaos test's webhook subscriber. It checks each
// delivery's signature and counts the run.succeeded deliveries by run;
// the first attempt of one run in ten is answered 503, so that retries
// are part of the workload.
type chaosSubscriber struct {
	secret  []byte
	mu      sync.Mutex
	got     map[string]int
	refused map[string]bool
	bad     atomic.Int64
	lastBad atomic.Pointer[string]
}

func (s *chaosSubscriber) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = hook.Verify(s.secret, r.Header.Get(hook.SignatureHeader), body, time.Now(), 10*time.Minute)
	}
	var ev struct {
		Type string
		Data struct{ ID string }
	}
	if err == nil {
		err = json.Unmarshal(body, &ev)
	}
	if err != nil {
		s.bad.Add(1)
		msg := fmt.Sprintf("%v: %s", err, body)
		s.lastBad.Store(&msg)
		http.Error(w, "bad delivery", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.refused[ev.Data.ID] && (len(s.got)+len(s.refused))%10 == 3 {
		s.refused[ev.Data.ID] = true
		http.Error(w, "not now", http.StatusServiceUnavailable)
		return
	}
	s.got[ev.Data.ID]++
}

// check waits up to a minute (a refused delivery comes again some
// seconds later) for a delivery of every run and returns how many runs
// were delivered more than once.
func (s *chaosSubscriber) check(t *testing.T, runs map[string]int) (repeated int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s.mu.Lock()
		var missing []string
		repeated = 0
		for id := range runs {
			switch n := s.got[id]; {
			case n == 0:
				missing = append(missing, id)
			case n > 1:
				repeated++
			}
		}
		s.mu.Unlock()
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d of %d runs' run.succeeded never reached the subscriber, such as %s", len(missing), len(runs), missing[0])
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := s.bad.Load(); n > 0 {
		t.Errorf("%d deliveries were not signed or not events; the last: %s", n, *s.lastBad.Load())
	}
	return repeated
}
