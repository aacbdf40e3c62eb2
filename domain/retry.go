package domain

import (
	"fmt"
	"time"
)

// EventRunRetried records a failed run taken up again from its failed
// step: who retried it, the step and, when given, why.
const EventRunRetried = "RUN_RETRIED"

// Codes of refused retries.
const (
	// CodeRunNotFailed refuses a retry of a run that did not fail.
	CodeRunNotFailed = "run_not_failed"
	// CodeNotRetryable refuses a retry of a failed run that has nothing
	// to try again: it was rejected (a decision, not an error), or it kept
	// no failed step (it failed before this release).
	CodeNotRetryable = "not_retryable"
)

// RetryRequest asks to take a failed run up again from the step that
// failed it, with that step's input and the run's state as they were: a
// new attempt of the same run, not a new run.
type RetryRequest struct {
	RunID string
	By    string
	// Reason, optional, says why; it is kept in RUN_RETRIED and the audit
	// entry.
	Reason string
	Now    time.Time
	// Audit, when set, is written to the audit log in the retry's own
	// transaction.
	Audit *AuditEntry
}

// DecideRetry decides whether a run of status, failed with why, may be
// retried; kept says whether its failing commit kept the failed step's
// job. Only a failed run may: any other refuses with CodeRunNotFailed. A
// rejected run, or one without a kept step, refuses with CodeNotRetryable.
func DecideRetry(req RetryRequest, status RunStatus, why *RunError, kept bool) error {
	if status != RunFailed {
		return &ConflictError{Code: CodeRunNotFailed, Message: fmt.Sprintf("run %s is %s; only a failed run can be retried", req.RunID, status),
			Detail: map[string]any{"status": status}}
	}
	if err := Retryable(why); err != nil {
		return err
	}
	if !kept {
		return &ConflictError{Code: CodeNotRetryable, Message: fmt.Sprintf("run %s failed before failed steps were kept for retries; re-run it as a new run instead", req.RunID)}
	}
	return nil
}

// Retryable says why a run that failed with why cannot be retried, or nil
// when it can be: a rejection is a person's decision, which trying again
// would not change.
func Retryable(why *RunError) error {
	if why != nil && why.Code == CodeRejected {
		return &ConflictError{Code: CodeNotRetryable, Message: "the run was rejected: a decision, not an error, so there is nothing to try again; re-run it as a new run to ask again"}
	}
	return nil
}
