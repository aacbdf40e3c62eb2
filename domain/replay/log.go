package replay

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// Log event types. Checkpoint events are what replay reads to skip work;
// coordination events say which wait a run is paused on; both are kept in
// the run's log. Observability events go to subscribers only.
const (
	EventStepFinished      = "STEP_FINISHED"
	EventStepFailed        = "STEP_FAILED"
	EventSignalResolved    = "SIGNAL_RESOLVED"
	EventApprovalResolved  = "APPROVAL_RESOLVED"
	EventNowRecorded       = "NOW_RECORDED"
	EventUUIDRecorded      = "UUID_RECORDED"
	EventRunFinished       = "RUN_FINISHED"
	EventRunErrored        = "RUN_ERRORED"
	EventSignalAwaited     = "SIGNAL_AWAITED"
	EventApprovalRequested = "APPROVAL_REQUESTED"
	EventGroupAwaited      = "GROUP_AWAITED"
	EventGroupResolved     = "GROUP_RESOLVED"

	EventRunStarted  = "RUN_STARTED"
	EventStepStarted = "STEP_STARTED"
	EventStateDelta  = "STATE_DELTA"
	EventCustom      = "CUSTOM"
)

// Error codes of replay runs.
const (
	CodeNondeterminism = "nondeterminism"
	CodeSignalLost     = domain.CodeSignalLost
	CodeHandlerFailed  = "handler_failed"
)

// TimerSignal is the signal name a sleep waits on.
const TimerSignal = "__timer"

// primitive is the kind of a context call, as the log records it.
type primitive string

const (
	primStep     primitive = "Step"
	primNow      primitive = "Now"
	primUUID     primitive = "UUID"
	primSignal   primitive = "WaitForEvent"
	primApproval primitive = "Approve"
	primGroup    primitive = "AnyOrAll"
)

func primitiveOf(eventType string) (primitive, bool) {
	switch eventType {
	case EventStepFinished, EventStepFailed:
		return primStep, true
	case EventNowRecorded:
		return primNow, true
	case EventUUIDRecorded:
		return primUUID, true
	case EventSignalAwaited, EventSignalResolved:
		return primSignal, true
	case EventApprovalRequested, EventApprovalResolved:
		return primApproval, true
	case EventGroupAwaited, EventGroupResolved:
		return primGroup, true
	}
	return "", false
}

// call is one primitive reached by the handler, by kind and durable id.
type call struct {
	kind primitive
	id   string
}

func (c call) String() string { return fmt.Sprintf("%s(%q)", c.kind, c.id) }

// record is what the log holds for one durable id.
type record struct {
	call
	done    *domain.Event // STEP_FINISHED/FAILED, SIGNAL/APPROVAL/GROUP_RESOLVED, NOW/UUID_RECORDED
	awaited *domain.Event // SIGNAL_AWAITED, APPROVAL_REQUESTED, GROUP_AWAITED
}

// history is a run's log, read once per invocation and indexed by durable
// id: replaying a step is a map lookup, never a scan.
type history struct {
	byID  map[string]*record
	order []call // primitives in the order the log first saw them
	next  int64  // the log's next index
}

func newHistory(events []domain.Event) *history {
	h := &history{byID: make(map[string]*record, len(events)), next: 1}
	for i := range events {
		e := &events[i]
		h.next = max(h.next, e.Seq+1)
		switch {
		case e.Type == domain.EventRunRetried:
			h.forgetFailures()
		case e.Type != EventStepFailed || ownFailure(e):
			h.add(e)
		}
	}
	return h
}

// forgetFailures makes the durable steps that failed before a retry of
// the run (RUN_RETRIED) run again when the handler reaches them, instead
// of replaying their failure: retrying is asking them to. They keep their
// place in the order of primitives.
func (h *history) forgetFailures() {
	for _, r := range h.byID {
		if r.done != nil && r.done.Type == EventStepFailed {
			r.done = nil
		}
	}
}

// add indexes one entry of the log (read, or written by this invocation).
func (h *history) add(e *domain.Event) {
	kind, ok := primitiveOf(e.Type)
	if !ok {
		return
	}
	r := h.byID[e.Step]
	if r == nil {
		r = &record{call: call{kind: kind, id: e.Step}}
		h.byID[e.Step] = r
		h.order = append(h.order, r.call)
	}
	switch e.Type {
	case EventSignalAwaited, EventApprovalRequested, EventGroupAwaited:
		r.awaited = e
	default:
		r.done = e
	}
}

// ownFailure tells a durable step's STEP_FAILED from the kernel's event of
// the same name, which reports a failed invocation and has no stepId.
func ownFailure(e *domain.Event) bool {
	var p struct {
		StepID string `json:"stepId"`
	}
	return json.Unmarshal(e.Payload, &p) == nil && p.StepID == e.Step
}

// Log payloads.
type (
	stepFinished struct {
		StepID string          `json:"stepId"`
		Result json.RawMessage `json:"result"`
	}
	stepFailed struct {
		StepID string     `json:"stepId"`
		Error  *StepError `json:"error"`
	}
	recorded struct {
		StepID string          `json:"stepId"`
		Value  json.RawMessage `json:"value"`
	}
	signalAwaited struct {
		StepID   string     `json:"stepId"`
		Name     string     `json:"name"`
		Deadline *time.Time `json:"deadline,omitempty"`
	}
	signalResolved struct {
		StepID   string          `json:"stepId"`
		Name     string          `json:"name"`
		SignalID string          `json:"signalId,omitempty"`
		Payload  json.RawMessage `json:"payload,omitempty"`
		TimedOut bool            `json:"timedOut,omitempty"`
	}
	approvalRequested struct {
		StepID      string `json:"stepId"`
		ApprovalID  string `json:"approvalId"`
		Title       string `json:"title"`
		Description string `json:"description,omitempty"`
	}
	approvalResolved struct {
		StepID     string          `json:"stepId"`
		ApprovalID string          `json:"approvalId"`
		Approved   bool            `json:"approved"`
		Feedback   string          `json:"feedback,omitempty"`
		By         string          `json:"by,omitempty"`
		Data       json.RawMessage `json:"data,omitempty"`
	}
	groupAwaited struct {
		StepID   string           `json:"stepId"`
		Mode     domain.GroupMode `json:"mode"`
		Branches []Wait           `json:"branches"`
	}
	groupResolved struct {
		StepID string           `json:"stepId"`
		Mode   domain.GroupMode `json:"mode"`
		// Data is {"winner", "output"} for any, the outputs by name for
		// all, as the handler gets it.
		Data json.RawMessage `json:"data"`
	}
)
