package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tollgatehq/tollgate/domain"
)

// driveLimit bounds the jobs one Drive executes: a run that keeps making
// work due at once (a loop of steps) is left to the worker pool.
const driveLimit = 1000

// Drive executes the due jobs of one run in the calling goroutine, one
// after another, until it has none due: the run has paused, ended, or
// waits for a timer or a retry's backoff. It is how a host without the
// worker pool moves a run on; jobs are claimed as the pool claims them, so
// Drive and workers elsewhere never execute the same job. It returns the
// run as it then stands.
func (e *Engine) Drive(ctx context.Context, runID string) (domain.Run, error) {
	for range driveLimit {
		jobs, err := e.store.ClaimRunJobs(ctx, e.o.WorkerID, runID, e.o.Clock.Now(), e.o.Lease, 1)
		if err != nil {
			return domain.Run{}, err
		}
		if len(jobs) == 0 {
			break
		}
		e.driveChain(ctx, jobs[0])
		if err := ctx.Err(); err != nil {
			return domain.Run{}, err
		}
	}
	return e.store.Run(ctx, runID)
}

// driveChain executes job and then each job its commit hands back, in the
// calling goroutine, up to chainLimit of them; one left over at the limit
// goes back to the queue, due at once, for Drive's next claim.
func (e *Engine) driveChain(ctx context.Context, job domain.Job) {
	next := &job
	for n := 0; next != nil; n++ {
		if n == chainLimit {
			e.release(*next, 0, false)
			return
		}
		next = e.execute(ctx, ctx, *next, n, func() {}, true)
	}
}

// WebhookPayload is one stateless invocation's input: start a run, or
// deliver a signal or an approval to one, and drive it.
type WebhookPayload struct {
	// RunID names the run; without it WorkflowID and Input start one.
	RunID          string          `json:"runId,omitempty"`
	WorkflowID     string          `json:"workflowId,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
	// Signal is delivered as POST /api/v1/runs/{runId}/signals would.
	Signal *WebhookSignal `json:"signalDelivery,omitempty"`
	// Approval decides the run's approval wait ApprovalID.
	Approval *WebhookApproval `json:"approval,omitempty"`
}

// WebhookSignal is a signal delivery.
type WebhookSignal struct {
	Name     string          `json:"name"`
	SignalID string          `json:"signalId"`
	StepID   string          `json:"stepId,omitempty"`
	Payload  json.RawMessage `json:"payload,omitempty"`
	By       string          `json:"by,omitempty"`
}

// WebhookApproval is a decision on an approval wait.
type WebhookApproval struct {
	ApprovalID string `json:"approvalId"`
	Approved   bool   `json:"approved"`
	Feedback   string `json:"feedback,omitempty"`
	By         string `json:"by"`
}

// WebhookResult is where the invocation left the run.
type WebhookResult struct {
	Run domain.Run
	// Signal is the delivered signal, when the payload carried one.
	Signal *domain.Signal
	// Awaiting lists the run's pending waits when it is suspended.
	Awaiting []domain.Suspension
}

// HandleWebhook is for hosts that run Tollgate inside their own HTTP
// server, without the worker pool: it starts a run or delivers what the
// payload carries, then drives the run to its next pause or its end (see
// Drive) and answers with where it stands. A timer the run then waits for
// is a job like any other: the host drives the run again when it is due,
// or runs the pool.
func (e *Engine) HandleWebhook(ctx context.Context, p WebhookPayload) (WebhookResult, error) {
	var res WebhookResult
	runID := p.RunID
	switch {
	case runID == "" && p.WorkflowID == "":
		return res, &domain.ValidationError{Code: domain.CodeValidation, Message: "the payload names no run (runId) and no workflow to start (workflowId)"}
	case runID == "":
		if p.Signal != nil || p.Approval != nil {
			return res, &domain.ValidationError{Code: domain.CodeValidation, Message: "a signal or an approval needs the runId of the run it is for"}
		}
		run, _, err := e.Start(ctx, p.WorkflowID, p.Input, p.IdempotencyKey)
		if err != nil {
			return res, err
		}
		runID = run.ID
	case p.Signal != nil:
		sig, err := e.Signal(ctx, domain.SignalRequest{RunID: runID, Name: p.Signal.Name, SignalID: p.Signal.SignalID,
			StepKey: p.Signal.StepID, Payload: p.Signal.Payload, By: p.Signal.By})
		if err != nil {
			return res, err
		}
		res.Signal = &sig
	}
	if p.Approval != nil {
		if err := e.decideWait(ctx, runID, *p.Approval); err != nil {
			return res, err
		}
	}
	run, err := e.Drive(ctx, runID)
	if err != nil {
		return res, err
	}
	res.Run = run
	if run.Status == domain.RunSuspended {
		res.Awaiting, _, err = e.store.Suspensions(ctx, domain.SuspensionFilter{RunID: runID, Status: domain.SuspensionPending, Limit: 500})
	}
	return res, err
}

// decideWait decides the run's approval wait a.ApprovalID.
func (e *Engine) decideWait(ctx context.Context, runID string, a WebhookApproval) error {
	if a.By == "" {
		return &domain.ValidationError{Code: domain.CodeValidation, Message: "an approval says who decided (by)"}
	}
	ss, _, err := e.store.Suspensions(ctx, domain.SuspensionFilter{RunID: runID, StepKey: a.ApprovalID, Kind: domain.KindApproval, Limit: 1})
	if err != nil {
		return err
	}
	if len(ss) == 0 {
		return fmt.Errorf("approval %s of run %s: %w", a.ApprovalID, runID, domain.ErrNotFound)
	}
	_, err = e.Decide(ctx, domain.ResumeRequest{SuspensionID: ss[0].ID, By: a.By}, a.Approved, a.Feedback)
	return err
}
