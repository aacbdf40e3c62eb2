// Command tollgate-worker is a reference endpoint for Tollgate's async http
// steps. It acknowledges each call at once, does the work in the
// background, and reports the outcome to the call's metadata.webhookUrl
// with the safe webhook pattern: 200 means recorded; 400 is the engine's
// state validation (the work item is already finished, or its run has
// ended), so stop, as for any 4xx but 408 and 429, which a resend cannot
// change; anything else, or no answer, is retried with exponential
// backoff.
//
// The work it does is what the step's args ask for, so that it can stand
// in for real work in tests and demos:
//
//	{"sleepMs": 50, "echo": {...}}      succeed after a while, outputs {"echo": ...}
//	{"fail": "message"}                 report a failure
//	{"notCompletedTimes": 2}            report "not completed" on the first 2 calls
//	{"reportTwice": true}               send the report twice (the second gets 400)
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tollgate-worker:", err)
		os.Exit(1)
	}
}

type call struct {
	Args struct {
		SleepMs           int             `json:"sleepMs"`
		Echo              json.RawMessage `json:"echo"`
		Fail              string          `json:"fail"`
		NotCompletedTimes int             `json:"notCompletedTimes"`
		ReportTwice       bool            `json:"reportTwice"`
	} `json:"args"`
	Metadata struct {
		FlowID       string `json:"flowId"`
		StepID       string `json:"stepId"`
		RunID        string `json:"runId"`
		Attempt      int    `json:"attempt"`
		ReceiptToken string `json:"receiptToken"`
		WebhookURL   string `json:"webhookUrl"`
	} `json:"metadata"`
}

type worker struct {
	log       *slog.Logger
	client    *http.Client
	attempts  int
	retryBase time.Duration
	work      sync.WaitGroup
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("tollgate-worker", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8081", "address to listen on")
	attempts := fs.Int("attempts", 5, "how many times a report is sent before giving up")
	retryBase := fs.Duration("retry-base", time.Second, "wait before the first resend; it doubles each time")
	if err := fs.Parse(args); err != nil {
		return err
	}
	w := &worker{
		log:    slog.New(slog.NewTextHandler(os.Stderr, nil)),
		client: &http.Client{Timeout: 10 * time.Second}, attempts: *attempts, retryBase: *retryBase,
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: w.accept(ctx), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "tollgate-worker listening on http://%s\n", ln.Addr())
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	err = srv.Serve(ln)
	w.work.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// accept acknowledges a call and leaves the work to the background, which
// gives up when ctx ends (Tollgate calls again after the step's completion
// timeout).
func (w *worker) accept(ctx context.Context) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var c call
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&c); err != nil || c.Metadata.WebhookURL == "" {
			http.Error(rw, `{"success": false, "error": "expected an async step call with metadata.webhookUrl"}`, http.StatusBadRequest)
			return
		}
		w.log.Info("Accepted", "flow_id", c.Metadata.FlowID, "step_id", c.Metadata.StepID, "run_id", c.Metadata.RunID,
			"attempt", c.Metadata.Attempt, "receipt_token", c.Metadata.ReceiptToken)
		w.work.Go(func() { w.do(ctx, c) })
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write([]byte(`{"success": true}`))
	})
}

func (w *worker) do(ctx context.Context, c call) {
	if !sleep(ctx, time.Duration(c.Args.SleepMs)*time.Millisecond) {
		w.log.Warn("Work abandoned: shutting down", "receipt_token", c.Metadata.ReceiptToken)
		return
	}
	rep := domain.StepOutcome{Success: true, Outputs: json.RawMessage(`{}`)}
	switch {
	case c.Args.NotCompletedTimes > 0 && c.Metadata.Attempt <= c.Args.NotCompletedTimes:
		rep = domain.StepOutcome{NotCompleted: true}
	case c.Args.Fail != "":
		rep = domain.StepOutcome{Error: c.Args.Fail}
	case len(c.Args.Echo) > 0:
		rep.Outputs, _ = json.Marshal(map[string]json.RawMessage{"echo": c.Args.Echo})
	}
	w.send(ctx, c, rep)
	if c.Args.ReportTwice {
		w.send(ctx, c, rep)
	}
}

// send reports an outcome: 2xx is done, a permanent refusal is final,
// anything else is tried again after a growing wait.
func (w *worker) send(ctx context.Context, c call, rep domain.StepOutcome) {
	body, _ := json.Marshal(rep)
	retry := domain.RetryPolicy{InitialBackoff: w.retryBase, Multiplier: 2}
	for attempt := 1; ; attempt++ {
		wait := retry.Backoff(attempt, 0)
		resp, err := w.client.Post(c.Metadata.WebhookURL, "application/json", bytes.NewReader(body))
		if err == nil {
			answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			switch {
			case resp.StatusCode >= 200 && resp.StatusCode < 300:
				return
			case permanent(resp.StatusCode):
				w.log.Warn("Report refused for good; not sending it again", "receipt_token", c.Metadata.ReceiptToken, "status", resp.StatusCode, "answer", string(answer))
				return
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		if attempt == w.attempts {
			w.log.Error("Report not delivered", "receipt_token", c.Metadata.ReceiptToken, "error", err)
			return
		}
		w.log.Warn("Report failed; sending it again", "receipt_token", c.Metadata.ReceiptToken, "error", err, "wait", wait)
		if !sleep(ctx, wait) {
			w.log.Error("Report not delivered: shutting down", "receipt_token", c.Metadata.ReceiptToken, "error", err)
			return
		}
	}
}

// permanent reports whether a report answered with status must not be
// sent again: a 4xx says the report itself is refused (400: the work item
// is finished or its run has ended; 404: no such token), except 408
// (Request Timeout) and 429 (Too Many Requests), which ask for a resend.
func permanent(status int) bool {
	return status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

// sleep waits for d and reports whether it did, rather than ctx ending.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
